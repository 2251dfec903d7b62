"""The translate task's model families: their sizes from the data, the builder the registry names for a config,
and the parts class that reads a saved one back (both families' parts decode alike:
`kpipe.families.seq2seq_decoding`)."""

from __future__ import annotations

import dataclasses

import keras

from kpipe.families.seq2seq_attention.model import Seq2SeqParts
from kpipe.families.seq2seq_transformer.model import TransformerParts
from kpipe.preprocessing.configs import PairPreprocessingConfig
from kpipe.tasks.registry import family_spec


def sized(model_config, source_vocabulary: int, target_vocabulary: int, pre: PairPreprocessingConfig):
    """`model_config` with what the data sets: vocabulary sizes, and the transformer's position tables (room for
    the longest source, and for the start token, the longest target and the end token)."""
    model_config = dataclasses.replace(model_config, source_vocabulary_size=source_vocabulary,
                                       target_vocabulary_size=target_vocabulary)
    if model_config.family == "seq2seq_transformer":
        model_config = dataclasses.replace(model_config, source_positions=pre.max_source_length,
                                           target_positions=pre.max_target_length + 2)
    return model_config


def build_translation_model(model_config) -> Seq2SeqParts | TransformerParts:
    return family_spec("translate", model_config.family).build(model_config)


def parts_of(model: keras.Model) -> Seq2SeqParts | TransformerParts:
    """The decoding parts of a saved translation model, by the name its builder gave it (the family's)."""
    return family_spec("translate", model.name).decoding().from_model(model)
