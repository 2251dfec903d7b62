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

import re

import keras
import numpy as np

CELL_LAYER = re.compile(r"^(lstm|gru)_(\d+)$")  # the recurrent layers' names in `build_char_generator`


def state_names(model: keras.Model) -> list[tuple[str, int]]:
    """(name, size) of every recurrent state, bottom layer first: state_0_h, state_0_c (LSTM), state_1_h, ..."""
    return [state for layer in recurrent_layers(model) for state in layer_states(layer)]


def layer_states(layer) -> list[tuple[str, int]]:
    """(name, size) of one recurrent layer's states: h (and c for an LSTM), named by the layer's index."""
    index = CELL_LAYER.match(layer.name).group(2)
    return [(f"state_{index}_{kind}", layer.cell.units)
            for kind in (("h", "c") if layer.name.startswith("lstm") else ("h",))]


def recurrent_layers(model: keras.Model) -> list:
    return sorted((layer for layer in model.layers if CELL_LAYER.match(layer.name)),
                  key=lambda layer: int(CELL_LAYER.match(layer.name).group(2)))


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
    outputs = []
    for layer in recurrent_layers(model):
        states = [keras.Input((size,), dtype="float32", name=name) for name, size in layer_states(layer)]
        inputs.update({state.name: state for state in states})
        layer.cell.name = f"{layer.name}_cell"  # unique in the step network (every LSTM's cell is "lstm_cell")
        x, new = layer.cell(x, states)
        outputs += list(new) if isinstance(new, (list, tuple)) else [new]
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
