"""The character generator as one-step networks, for its portable export (`kpipe export names-char`).

The trained model reads whole sequences; sampling reads one character at a time. Run on the whole sequence again at
every step, a 512-unit LSTM's LiteRT network took 131 ms for 10 names against the SavedModel's 8.6 ms (its
in-graph sampler steps the cells). So the export holds the model's layers rearranged as `CharSampler` uses them:

    step    (char (batch,), category (batch,), state_0_h, state_0_c, ...) -> [logits, new state_0_h, ...]
    start   category (batch,) -> the first layer's initial states (only with conditioning = "initial_state";
            otherwise every layer starts from zeros)

The same trained layer objects, so the same weights; dropout is expected removed (`kpipe.exports.portable_networks.network`).
"""

from __future__ import annotations

import keras
import numpy as np

from kpipe.layers.recurrent_steps import state_names, step_layers

def step_network(model: keras.Model) -> keras.Model:
    """One step of every recurrent layer: inputs {"char", "category", state names}, outputs [logits, *new states]
    (the new states in `state_names` order)."""
    char = keras.Input((), dtype="int32", name="char")
    category = keras.Input((), dtype="int32", name="category")
    inputs = {"char": char, "category": category}
    # the embedding table itself (the layer would attach a padding mask, which a cell does not take)
    x = keras.ops.take(model.get_layer("char_embedding").embeddings, char, axis=0)
    if "join_category" in {layer.name for layer in model.layers}:  # conditioning = "every_step"
        vector = model.get_layer("category_embedding")(category)
        x = keras.ops.concatenate([x, keras.ops.cast(vector, x.dtype)], axis=-1)
    x, outputs = step_layers(model, x, inputs)
    network = keras.Model(inputs, [model.get_layer("next_char")(x), *outputs], name="char_generator_step")
    network({"char": np.zeros((1,), "int32"), "category": np.zeros((1,), "int32"),
             **{name: np.zeros((1, size), "float32") for name, size in state_names(model)}})
    return network


def start_network(model: keras.Model) -> keras.Model | None:
    """category -> the first layer's initial states (h, and c for an LSTM), or None when every layer starts from
    zeros (conditioning "none" or "every_step")."""
    layers = [model.get_layer(name) for name in ("category_to_h", "category_to_c")
              if name in {layer.name for layer in model.layers}]
    if not layers:
        return None
    category = keras.Input((), dtype="int32", name="category")
    vector = model.get_layer("category_embedding")(category)
    network = keras.Model(category, [layer(vector) for layer in layers], name="char_generator_start")
    network(np.zeros((1,), "int32"))
    return network
