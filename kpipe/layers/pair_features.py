"""How a siamese classifier compares its two sentence vectors: `[u, v, |u - v|, u * v]`.

The combination of InferSent (Conneau et al. 2017) and Sentence-BERT (Reimers & Gurevych 2019): the
difference and the product let a linear head see agreement and contrast, which `u` and `v` side by side do
not give it.
"""

from __future__ import annotations

import keras


@keras.saving.register_keras_serializable(package="kpipe")
class PairFeatures(keras.layers.Layer):
    """[u, v] of shape (batch, d) each -> (batch, 4 d): u, v, |u - v| and u * v side by side."""

    def call(self, inputs):
        u, v = inputs
        return keras.ops.concatenate([u, v, keras.ops.abs(u - v), u * v], axis=-1)

    def compute_output_shape(self, input_shape):
        shape = input_shape[0]
        return (*shape[:-1], None if shape[-1] is None else 4 * shape[-1])
