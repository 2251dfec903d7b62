"""The one list of modules whose Keras-serializable classes a saved `model.keras` may name: the shared ones
written here, every family's builder module taken from the task registry.

Each module registers its classes (`@keras.saving.register_keras_serializable(package="kpipe")`)
when it is imported; `keras.saving.load_model` finds them only once that has happened. A test checks
that every kpipe module that registers a class is listed here.
"""

from __future__ import annotations

import importlib

from kpipe.tasks.registry import TASKS

# Layers several families share, and classes outside the families that a model may hold.
SHARED_MODULES = (
    "kpipe.layers.attention_variants",
    "kpipe.layers.crf",
    "kpipe.layers.fmm_attention",
    "kpipe.layers.linear_attention",
    "kpipe.layers.masked_pooling",
    "kpipe.layers.pair_features",
    "kpipe.layers.random_feature_attention",
    "kpipe.preprocessing.standardize",
    "kpipe.training.schedules",
    "keras_hub",
)
# Every family's builder module (its own layers live beside its builder), from the task registry.
FAMILY_MODULES = tuple(sorted({family.builder.split(":")[0] for task in TASKS.values() for family in task.families
                               if family.builder}))
CUSTOM_LAYER_MODULES = SHARED_MODULES + FAMILY_MODULES


def register_custom_layers() -> None:
    """Import every module in `CUSTOM_LAYER_MODULES`, so their classes are known to Keras' loader."""
    for module in CUSTOM_LAYER_MODULES:
        importlib.import_module(module)
