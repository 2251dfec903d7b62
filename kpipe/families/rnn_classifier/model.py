"""Embedding + stacked (Bi)LSTM/GRU text classifier, built with the functional API."""

from __future__ import annotations

import logging

import keras

from kpipe.families.rnn_classifier.config import RNNClassifierConfig
from kpipe.layers.classifier_head import probabilities_layer
from kpipe.layers.masked_pooling import MaskedMaxPooling, MaskedMeanPooling
from kpipe.layers.pair_features import PairFeatures
from kpipe.layers.recurrent_cells import CELLS

log = logging.getLogger(__name__)

POOLINGS = {"max": MaskedMaxPooling, "mean": MaskedMeanPooling}  # the kinds `config.pooling` names


def build_rnn_classifier(config: RNNClassifierConfig, *, embeddings_initializer="uniform",
                         trainable_embeddings: bool = True) -> keras.Model:
    """Build an embedding + stacked (Bi)LSTM/GRU classifier.

    Token id 0 is padding: the embedding masks it, so right-padded batches of any length give
    the same outputs, and cuDNN kernels can be used on GPU.

    Args:
        config: the hyperparameters.
        embeddings_initializer: initializer of the embedding table, e.g. a `keras.initializers.Constant`
            holding pretrained vectors of shape (vocabulary_size, embedding_dim). Default "uniform".
        trainable_embeddings: False freezes the embedding table.

    With `config.text_pairs` the model takes a pair's ids `(batch, 2, time)`, both texts read by one shared
    (siamese) encoder whose vectors u and v reach the head as `[u, v, |u - v|, u * v]`.

    Returns:
        A `keras.Model` mapping int token ids `(batch, time)` to probabilities: `(batch, 1)`
        (sigmoid) when `num_classes == 2`, else `(batch, num_classes)` (softmax).

    Example:
        >>> model = build_rnn_classifier(RNNClassifierConfig(vocabulary_size=100, num_classes=3))
        >>> model.output_shape
        (None, 3)
    """
    if config.recurrent_dropout > 0:
        log.warning("recurrent_dropout=%s disables the cuDNN LSTM/GRU kernels on GPU", config.recurrent_dropout)

    # === Inputs: token ids, or a pair's ids (batch, 2, time) read by one shared encoder ===
    if config.text_pairs:
        token_ids = keras.Input(shape=(2, None), dtype="int32", name="token_ids")
        encoder = _sentence_encoder(config, embeddings_initializer, trainable_embeddings)
        x = PairFeatures(name="pair_features")([encoder(token_ids[:, 0]), encoder(token_ids[:, 1])])
    else:
        token_ids = keras.Input(shape=(None,), dtype="int32", name="token_ids")
        x = _encode(token_ids, config, embeddings_initializer, trainable_embeddings)

    # === Head (float32 even under mixed precision, for a stable loss) ===
    if config.dropout:
        x = keras.layers.Dropout(config.dropout, name="head_dropout")(x)
    probabilities = probabilities_layer(config.num_classes, config.multi_label)(x)
    return keras.Model(token_ids, probabilities, name="rnn_classifier")


def _sentence_encoder(config: RNNClassifierConfig, embeddings_initializer, trainable_embeddings) -> keras.Model:
    """One text's ids (batch, time) -> its vector: the siamese encoder both texts of a pair go through."""
    token_ids = keras.Input(shape=(None,), dtype="int32", name="text_ids")
    return keras.Model(token_ids, _encode(token_ids, config, embeddings_initializer, trainable_embeddings),
                       name="sentence_encoder")


def embedding_layer(model: keras.Model) -> keras.layers.Embedding:
    """The token embedding of a model `build_rnn_classifier` made (inside the shared encoder of a pair model)."""
    if any(layer.name == "sentence_encoder" for layer in model.layers):
        model = model.get_layer("sentence_encoder")
    return model.get_layer("embedding")


def _encode(token_ids, config: RNNClassifierConfig, embeddings_initializer, trainable_embeddings):
    """Embedding, recurrent stack and pooling: token ids (batch, time) -> (batch, features)."""
    # === Embedding (mask_zero: id 0 is padding) ===
    x = keras.layers.Embedding(config.vocabulary_size, config.embedding_dim, mask_zero=True,
                               embeddings_initializer=embeddings_initializer,
                               trainable=trainable_embeddings, name="embedding")(token_ids)

    # === Recurrent stack: every layer but the last returns the full sequence (the last too when pooled) ===
    pooled = config.pooling != "last"
    for i, units in enumerate(config.units):
        last = i == len(config.units) - 1
        layer = CELLS[config.cell](units, return_sequences=pooled or not last, dropout=config.dropout,
                                   recurrent_dropout=config.recurrent_dropout, name=f"{config.cell}_{i}")
        if config.bidirectional:
            layer = keras.layers.Bidirectional(layer, name=f"bidirectional_{i}")
        x = layer(x)

    # === Pooling over the non-padding tokens (the mask travels with x) ===
    if pooled:  # "max", "mean" or "max_mean" (both, concatenated)
        outputs = [POOLINGS[kind](name=f"{kind}_pooling")(x) for kind in config.pooling.split("_")]
        x = outputs[0] if len(outputs) == 1 else keras.layers.Concatenate(name="pooled")(outputs)
    return x
