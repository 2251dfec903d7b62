"""Bag-of-n-grams classifiers (functional API) on sparse n-gram features.

    sparse features ─[naive-Bayes scaling]─> Dense(hidden, relu) + Dropout ─> Dense(classes)
                                        └──────────── (hidden_units = 0: linear) ──────────┘

With naive-Bayes weighting (NBSVM, Wang & Manning 2012) each binary feature is scaled by its
log-count ratio before the linear layer: for two classes one ratio per feature; for more, the
linear layer's weight for class c is scaled by that class's ratios (one-against-the-rest).
"""

from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf

from kpipe.families.bag_of_ngrams.config import BagOfNgramsConfig
from kpipe.layers.classifier_head import head_units, probabilities_layer


@keras.saving.register_keras_serializable(package="kpipe")
class NaiveBayesLinear(keras.layers.Layer):
    """Dense layer on sparse inputs whose kernel is scaled elementwise by fixed log-count ratios:
    y = x @ (kernel * ratios) + bias. `ratios` is (features, units), not trained."""

    def __init__(self, units: int, **kwargs):
        super().__init__(**kwargs)
        self.units = units

    def build(self, input_shape):
        features = input_shape[-1]
        self.ratios = self.add_weight(shape=(features, self.units), initializer="ones", trainable=False,
                                      name="ratios")
        self.kernel = self.add_weight(shape=(features, self.units), initializer="zeros", name="kernel")
        self.bias = self.add_weight(shape=(self.units,), initializer="zeros", name="bias")

    def call(self, inputs):
        return keras.ops.matmul(inputs, self.kernel * self.ratios) + self.bias

    def get_config(self):
        return {**super().get_config(), "units": self.units}


@keras.saving.register_keras_serializable(package="kpipe")
class SparseFeatureScale(keras.layers.Layer):
    """Scales each feature of a sparse input by a fixed weight (the naive-Bayes ratios of a binary task)."""

    def build(self, input_shape):
        self.scale = self.add_weight(shape=(input_shape[-1],), initializer="ones", trainable=False, name="scale")

    def compute_output_spec(self, inputs):
        return keras.KerasTensor(inputs.shape, dtype=inputs.dtype, sparse=getattr(inputs, "sparse", False))

    def call(self, inputs):
        if isinstance(inputs, tf.SparseTensor):
            return tf.SparseTensor(inputs.indices, inputs.values * tf.gather(self.scale, inputs.indices[:, 1]),
                                   inputs.dense_shape)
        return inputs * self.scale


def build_bag_of_ngrams(config: BagOfNgramsConfig, nb_ratios: np.ndarray | None = None) -> keras.Model:
    """The classifier on `config.vocabulary_size` sparse features.

    Args:
        config: with `vocabulary_size` and `num_classes` set from the data.
        nb_ratios: naive-Bayes log-count ratios, (features, 1) for two classes or (features, classes),
            required when `config.weighting == "nb"`.
    """
    units, activation = head_units(config.num_classes, config.multi_label)
    binary = units == 1
    inputs = keras.Input(shape=(config.vocabulary_size,), sparse=True, name="ngrams")
    regularizer = keras.regularizers.L2(config.l2) if config.l2 else None
    x = inputs
    if config.weighting == "nb" and (config.hidden_units or binary):
        scale = SparseFeatureScale(name="nb_scale")
        x = scale(x)
        scale.set_weights([nb_ratios[:, 0]])
    if config.hidden_units:
        x = keras.layers.Dense(config.hidden_units, activation="relu", kernel_regularizer=regularizer,
                               name="hidden")(x)
        x = keras.layers.Dropout(config.dropout)(x)
    if config.weighting == "nb" and not config.hidden_units and not binary:
        head = NaiveBayesLinear(units, name="nb_linear")
        logits = head(x)
        head.ratios.assign(nb_ratios)
        outputs = keras.layers.Activation(activation, dtype="float32", name="probabilities")(logits)
    else:
        outputs = probabilities_layer(config.num_classes, config.multi_label, kernel_regularizer=regularizer)(x)
    return keras.Model(inputs, outputs, name="bag_of_ngrams")
