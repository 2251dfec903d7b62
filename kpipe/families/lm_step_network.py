"""A language model's decoder (`kpipe.families.lm_decoding`: `gpt`'s key/value caches or linear attention's running
sums, `rnn_lm`'s cell states) as a one-step network, for its portable export (`kpipe export`):

    (token (batch,), index (batch,), state_0, state_1, ...) -> [next-token logits (batch, vocabulary), new state_0, ...]

the cache flattened (`tf.nest` order) into `state_N` inputs and outputs, `index` the token's position (the batch's
first is used: the portable runtime steps one text at a time). The decoder's own `step`, so the export computes what
the SavedModel's samplers do, with one change: keras-hub's cached attention writes a position's keys and values with
`ops.slice_update` (XLA's DynamicUpdateSlice, which neither tf2onnx nor LiteRT converts), here replaced while the
network is traced by padding the update to the cache's shape and selecting it (ONNX's Pad and Where); and the exact
GELU's Erfc, which ONNX lacks, by 1 - Erf (`convertible_ops`)."""

from __future__ import annotations

import contextlib

import keras
import numpy as np
import tensorflow as tf


@contextlib.contextmanager
def convertible_ops():
    """For the networks traced inside, the same values through ops the converters take: `keras.ops.slice_update`
    as a pad and a select, and the exact GELU's `erfc(x)` (tf.nn.gelu's; ONNX has no Erfc) as `1 - erf(x)`."""
    from tensorflow.python.ops import math_ops

    slice_update, erfc = keras.ops.slice_update, math_ops.erfc

    def update(inputs, start_indices, updates):
        starts = tf.cast(tf.stack(start_indices), tf.int32)
        paddings = tf.stack([starts, tf.shape(inputs) - starts - tf.shape(updates)], axis=1)
        return tf.where(tf.pad(tf.ones_like(updates, tf.bool), paddings), tf.pad(updates, paddings), inputs)

    keras.ops.slice_update = update
    math_ops.erfc = lambda x, name=None: 1.0 - math_ops.erf(x)
    try:
        yield
    finally:
        keras.ops.slice_update, math_ops.erfc = slice_update, erfc


class DecoderStep(keras.layers.Layer):
    """`decoder.step` on flat states; holds the trained model so its weights are the network's."""

    def __init__(self, model: keras.Model, decoder, structure, **kwargs):
        super().__init__(**kwargs)
        self.model, self.decoder, self.structure = model, decoder, structure

    def call(self, token, index, states):
        cache = tf.nest.pack_sequence_as(self.structure, list(states))
        with convertible_ops():
            logits, _, new = self.decoder.step(token[:, None], cache, index[0])
        return [tf.cast(logits, tf.float32), *tf.nest.flatten(new)]


def step_network(model: keras.Model, decoder, sequence_length: int) -> keras.Model:
    """The one-step network of `decoder` (built on `model`), its caches sized for `sequence_length` positions."""
    structure = decoder.empty_cache(tf.zeros([1, sequence_length], tf.int32))
    flat = [np.asarray(state) for state in tf.nest.flatten(structure)]
    token = keras.Input((), dtype="int32", name="token")
    index = keras.Input((), dtype="int32", name="index")
    states = [keras.Input(state.shape[1:], dtype="float32", name=f"state_{i}") for i, state in enumerate(flat)]
    outputs = DecoderStep(model, decoder, structure, name="decoder_step")(token, index, states)
    network = keras.Model({"token": token, "index": index, **{s.name: s for s in states}}, outputs,
                          name="language_model_step")
    network({"token": np.zeros((1,), "int32"), "index": np.zeros((1,), "int32"),
             **{f"state_{i}": np.zeros_like(state) for i, state in enumerate(flat)}})
    return network
