"""The one list of modules whose Keras-serializable classes a saved `model.keras` may name.

Each module registers its classes (`@keras.saving.register_keras_serializable(package="kpipe")`)
when it is imported; `keras.saving.load_model` finds them only once that has happened. A test checks
that every kpipe module that registers a class is listed here.
"""

from __future__ import annotations

import importlib

CUSTOM_LAYER_MODULES = (
    "kpipe.models.attention_variants",
    "kpipe.models.bag_of_ngrams",
    "kpipe.models.char_generator",
    "kpipe.models.char_transformer",
    "kpipe.models.fmm_attention",
    "kpipe.models.linear_attention",
    "kpipe.models.masked_pooling",
    "kpipe.models.pair_features",
    "kpipe.models.random_feature_attention",
    "kpipe.models.rnn_forecaster",
    "kpipe.models.seq2seq",
    "kpipe.models.word2vec",
    "kpipe.preprocessing.standardize",
    "kpipe.training.schedules",
    "keras_hub",
)


def register_custom_layers() -> None:
    """Import every module in `CUSTOM_LAYER_MODULES`, so their classes are known to Keras' loader."""
    for module in CUSTOM_LAYER_MODULES:
        importlib.import_module(module)
