"""The recurrent language model as a one-step network, for its portable export (`kpipe export`): the trained
model reads whole sequences, generation reads one token at a time (as `RecurrentDecoder` does in the graph):

    step    (token (batch,), state_0_h, state_0_c, ...) -> [next-token logits (batch, vocabulary), new states...]

The same trained layer objects, so the same weights; dropout is expected removed
(`kpipe.exports.portable_networks.network`)."""

from __future__ import annotations

import keras
import numpy as np

from kpipe.layers.recurrent_steps import state_names, step_layers


def step_network(model: keras.Model) -> keras.Model:
    """One step of `build_rnn_lm`'s model: inputs {"token", state names}, outputs [logits, *new states] (the new
    states in `state_names` order)."""
    token = keras.Input((), dtype="int32", name="token")
    inputs = {"token": token}
    embedding = model.get_layer("token_embedding")
    x = keras.ops.take(embedding.embeddings, token, axis=0)
    x, states = step_layers(model, x, inputs)
    if "to_embedding" in {layer.name for layer in model.layers}:
        x = model.get_layer("to_embedding")(x)
    logits = keras.ops.cast(embedding(x, reverse=True), "float32")
    network = keras.Model(inputs, [logits, *states], name="rnn_lm_step")
    network({"token": np.zeros((1,), "int32"),
             **{name: np.zeros((1, size), "float32") for name, size in state_names(model)}})
    return network
