"""`build_rnn_tagger`: word ids, character ids and casing ids (batch, words[, characters]) -> per-word tag
scores (batch, words, tags): probabilities with a softmax output, the CRF's emissions with a CRF (decoded by
`kpipe.layers.crf.CRF.viterbi`). Sentences are right-padded with id 0, as cuDNN's masked LSTMs need."""

from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf

from kpipe.families.rnn_tagger.config import RNNTaggerConfig
from kpipe.layers.crf import CRF
from kpipe.layers.recurrent_cells import CELLS
from kpipe.tokens import CASING_CLASSES


@keras.saving.register_keras_serializable(package="kpipe")
class CharWordEncoder(keras.layers.Layer):
    """Each word's characters (batch, words, chars) -> one vector per word (batch, words, features): a CNN
    max-pooled over the word's characters, or a BiLSTM's final states. Padding characters (id 0) are left out (zeros
    under the convolution, masked in the BiLSTM); a padding word reads as one padding character (a sequence of
    length 0 is what cuDNN cannot take)."""

    def __init__(self, kind: str, char_vocabulary_size: int, embedding_dim: int, units: int, window: int,
                 **kwargs):
        super().__init__(**kwargs)
        self.kind, self.units, self.window = kind, units, window
        self.char_vocabulary_size, self.embedding_dim = char_vocabulary_size, embedding_dim
        self.embedding = keras.layers.Embedding(char_vocabulary_size, embedding_dim, name="char_embedding")
        if kind == "cnn":
            self.encoder = keras.layers.Conv1D(units, window, padding="same", activation="tanh", name="char_cnn")
        else:
            self.encoder = keras.layers.Bidirectional(keras.layers.LSTM(units), name="char_lstm")

    def build(self, input_shape):
        self.embedding.build((None, None))
        shape = (None, None, self.embedding_dim)
        self.encoder.build(shape)

    def call(self, chars):
        shape = tf.shape(chars)
        flat = tf.reshape(chars, [-1, shape[2]])  # (batch * words, chars)
        present = tf.not_equal(flat, 0)
        present = tf.concat([tf.ones_like(present[:, :1]), present[:, 1:]], axis=1)  # at least one step
        x = self.embedding(flat)
        if self.kind == "cnn":
            # padding characters as zeros, which is what the convolution's own "same" padding adds past the batch's
            # longest word: a word's features then do not depend on how long the other words of its batch are
            x = self.encoder(x * tf.cast(tf.not_equal(flat, 0), x.dtype)[:, :, None])
            x = tf.reduce_max(tf.where(present[:, :, None], x, -1e9 * tf.ones_like(x)), axis=1)
        else:
            x = self.encoder(x, mask=present)
        return tf.reshape(x, [shape[0], shape[1], self.output_units])

    @property
    def output_units(self) -> int:
        return self.units if self.kind == "cnn" else 2 * self.units

    def compute_output_shape(self, input_shape):
        return (input_shape[0], input_shape[1], self.output_units)

    def get_config(self):
        return {**super().get_config(), "kind": self.kind, "char_vocabulary_size": self.char_vocabulary_size,
                "embedding_dim": self.embedding_dim, "units": self.units, "window": self.window}


def build_rnn_tagger(config: RNNTaggerConfig) -> keras.Model:
    """The tagger on inputs {"words": (batch, words), "chars": (batch, words, chars), "casing": (batch, words)},
    `config` holding the vocabulary sizes and `num_tags` the data set (pretrained vectors are assigned to the layer
    named "embedding" after building)."""
    words = keras.Input(shape=(None,), dtype="int32", name="words")
    chars = keras.Input(shape=(None, None), dtype="int32", name="chars")
    casing = keras.Input(shape=(None,), dtype="int32", name="casing")
    features = [keras.layers.Embedding(config.vocabulary_size, config.embedding_dim, mask_zero=True,
                                       trainable=config.embedding_training == "trainable", name="embedding")(words)]
    if config.char_features != "none":
        features.append(CharWordEncoder(config.char_features, config.char_vocabulary_size, config.char_embedding_dim,
                                        config.char_units, config.char_window, name="char_features")(chars))
    if config.casing:
        features.append(keras.layers.Embedding(CASING_CLASSES, config.casing_dim, name="casing_embedding")(casing))
    x = features[0] if len(features) == 1 else keras.layers.Concatenate(name="word_features")(features)
    x = keras.layers.Dropout(config.dropout, name="feature_dropout")(x)
    for i, units in enumerate(config.units):
        x = keras.layers.Bidirectional(CELLS[config.cell](units, return_sequences=True, name=f"{config.cell}_{i}"),
                                       name=f"bidirectional_{i}")(x)
    x = keras.layers.Dropout(config.dropout, name="output_dropout")(x)
    scores = keras.layers.Dense(config.num_tags, name="emissions")(x)
    if config.output == "crf":
        outputs = CRF(config.num_tags, name="crf")(scores)
    else:
        outputs = keras.layers.Activation("softmax", dtype="float32", name="probabilities")(scores)
    return keras.Model({"words": words, "chars": chars, "casing": casing}, outputs, name="rnn_tagger")


def example_inputs(batch: int = 2, words: int = 5, chars: int = 4, seed: int = 0) -> dict:
    """Random right-padded inputs (for tests and the harness): the last two words of the second sentence padding."""
    rng = np.random.default_rng(seed)
    word_ids = rng.integers(2, 10, size=(batch, words)).astype("int32")
    char_ids = rng.integers(1, 10, size=(batch, words, chars)).astype("int32")
    casing = rng.integers(1, CASING_CLASSES, size=(batch, words)).astype("int32")
    if batch > 1:
        word_ids[1, -2:], char_ids[1, -2:], casing[1, -2:] = 0, 0, 0
    return {"words": word_ids, "chars": char_ids, "casing": casing}
