"""The one list of modules whose Keras-serializable classes a saved `model.keras` may name.

Each module registers its classes (`@keras.saving.register_keras_serializable(package="kpipe")`)
when it is imported; `keras.saving.load_model` finds them only once that has happened. A test checks
that every kpipe module that registers a class is listed here.
"""

from __future__ import annotations

import importlib

CUSTOM_LAYER_MODULES = (
    "kpipe.layers.attention_variants",
    "kpipe.families.bag_of_ngrams.model",
    "kpipe.families.char_rnn.model",
    "kpipe.families.char_transformer.model",
    "kpipe.layers.fmm_attention",
    "kpipe.layers.linear_attention",
    "kpipe.layers.masked_pooling",
    "kpipe.layers.pair_features",
    "kpipe.layers.random_feature_attention",
    "kpipe.families.rnn_forecaster.model",
    "kpipe.families.seq2seq_attention.model",
    "kpipe.families.word2vec.model",
    "kpipe.preprocessing.standardize",
    "kpipe.training.schedules",
    "keras_hub",
)


def register_custom_layers() -> None:
    """Import every module in `CUSTOM_LAYER_MODULES`, so their classes are known to Keras' loader."""
    for module in CUSTOM_LAYER_MODULES:
        importlib.import_module(module)
