"""A model's stacked recurrent layers (named `lstm_0`, `gru_1`, ... by the builders) seen one step at a time: their
states' names and sizes, the inputs and outputs of the one-step networks that portable exports run
(`kpipe.families.char_rnn.step_network`, `kpipe.families.rnn_lm.step_network`)."""

from __future__ import annotations

import re

import keras

CELL_LAYER = re.compile(r"^(lstm|gru)_(\d+)$")


def recurrent_layers(model: keras.Model) -> list:
    """The model's recurrent layers, bottom first."""
    return sorted((layer for layer in model.layers if CELL_LAYER.match(layer.name)),
                  key=lambda layer: int(CELL_LAYER.match(layer.name).group(2)))


def layer_states(layer) -> list[tuple[str, int]]:
    """(name, size) of one recurrent layer's states: h (and c for an LSTM), named by the layer's index."""
    index = CELL_LAYER.match(layer.name).group(2)
    return [(f"state_{index}_{kind}", layer.cell.units)
            for kind in (("h", "c") if layer.name.startswith("lstm") else ("h",))]


def state_names(model: keras.Model) -> list[tuple[str, int]]:
    """(name, size) of every recurrent state, bottom layer first: state_0_h, state_0_c (LSTM), state_1_h, ..."""
    return [state for layer in recurrent_layers(model) for state in layer_states(layer)]


def step_layers(model: keras.Model, x, inputs: dict) -> tuple:
    """`x` (batch, features) through one step of every recurrent layer, each layer's state inputs added to `inputs`
    by name: (the top layer's output, the new states in `state_names` order)."""
    outputs = []
    for layer in recurrent_layers(model):
        states = [keras.Input((size,), dtype="float32", name=name) for name, size in layer_states(layer)]
        inputs.update({state.name: state for state in states})
        layer.cell.name = f"{layer.name}_cell"  # unique in the step network (every LSTM's cell is "lstm_cell")
        x, new = layer.cell(x, states)
        outputs += list(new) if isinstance(new, (list, tuple)) else [new]
    return x, outputs
