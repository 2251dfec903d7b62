"""The output layer every classifier family ends in: one sigmoid unit for two classes, a softmax over
several, or one sigmoid per label when a text can have several labels (multi-label)."""

from __future__ import annotations

import keras


def head_units(num_classes: int, multi_label: bool = False) -> tuple[int, str]:
    """(units, activation) of the output layer."""
    if multi_label:
        return num_classes, "sigmoid"
    return (1, "sigmoid") if num_classes == 2 else (num_classes, "softmax")


def probabilities_layer(num_classes: int, multi_label: bool = False, **dense_kwargs) -> keras.layers.Dense:
    """The Dense output layer, named `probabilities`, in float32 even under mixed precision (a stable loss)."""
    units, activation = head_units(num_classes, multi_label)
    return keras.layers.Dense(units, activation=activation, dtype="float32", name="probabilities", **dense_kwargs)
