"""`build_rnn_lm`: token ids -> embedding -> stacked LSTM/GRU -> next-token logits (the output tied to the
embedding), and `RecurrentDecoder`, which generates with the trained layers' cells one token at a time, carrying
their states (the cache of `kpipe.families.lm_decoding`)."""

from __future__ import annotations

import keras
import keras_hub
import tensorflow as tf

from kpipe.families.lm_decoding import StateDecoder
from kpipe.families.rnn_lm.config import RNNLanguageModelConfig
from kpipe.layers.recurrent_cells import CELLS


def build_rnn_lm(config: RNNLanguageModelConfig) -> keras.Model:
    """{token_ids, padding_mask} (batch, length) -> next-token logits (batch, length, vocabulary), float32.

    `padding_mask` is taken so every language-model family has the same inputs, and not read: padding is on the
    right and the recurrence runs forward, so no real position's output reads padding (masked outputs would only
    be the padding's, which the loss and `score` leave out).

    Example:
        >>> build_rnn_lm(RNNLanguageModelConfig(vocabulary_size=50, embedding_dim=8, units=(8,))).output_shape
        (None, None, 50)
    """
    token_ids = keras.Input((None,), dtype="int32", name="token_ids")
    padding_mask = keras.Input((None,), dtype="bool", name="padding_mask")
    embedding = keras_hub.layers.ReversibleEmbedding(config.vocabulary_size, config.embedding_dim,
                                                     tie_weights=config.tie_weights, name="token_embedding")
    x = keras.layers.Dropout(config.dropout, name="embedding_dropout")(embedding(token_ids))
    for i, units in enumerate(config.units):
        x = CELLS[config.cell](units, return_sequences=True, name=f"{config.cell}_{i}")(x)
        x = keras.layers.Dropout(config.dropout, name=f"dropout_{i}")(x)
    if config.units[-1] != config.embedding_dim:
        x = keras.layers.Dense(config.embedding_dim, name="to_embedding")(x)
    logits = keras.layers.Activation("linear", dtype="float32", name="logits")(embedding(x, reverse=True))
    return keras.Model({"token_ids": token_ids, "padding_mask": padding_mask}, logits, name="rnn_lm")


class RecurrentDecoder(StateDecoder):
    """The trained model's layers one token at a time: the cache is each recurrent layer's state."""

    def __init__(self, model: keras.Model, config: RNNLanguageModelConfig):
        self.config = config
        self.vocabulary_size = config.vocabulary_size
        self.embedding = model.get_layer("token_embedding")
        self.cells = [model.get_layer(f"{config.cell}_{i}").cell for i in range(len(config.units))]
        self.to_embedding = model.get_layer("to_embedding") if config.units[-1] != config.embedding_dim else None

    def empty_cache(self, token_ids):
        batch, states = tf.shape(token_ids)[0], 2 if self.config.cell == "lstm" else 1
        return [[tf.zeros([batch, units], self.cells[0].compute_dtype)] * states for units in self.config.units]

    def step(self, token, cache, index):
        x = self.embedding(token[:, 0])
        new_cache = []
        for cell, states in zip(self.cells, cache):
            x, states = cell(x, states, training=False)
            new_cache.append(list(states) if isinstance(states, (list, tuple)) else [states])
        hidden = self.to_embedding(x) if self.to_embedding else x
        return tf.cast(self.embedding(hidden, reverse=True), tf.float32), hidden, new_cache
