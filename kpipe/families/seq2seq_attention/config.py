"""The `seq2seq_attention` family's config, without TensorFlow (parsed and checked before TensorFlow loads)."""

from __future__ import annotations

import dataclasses

from kpipe.config.constraints import at_least, fraction, one_of, setting
from kpipe.config.decoding import DecodingSettings
from kpipe.layers.settings import CELL_CLASSES
from kpipe.tokens import SEQ2SEQ


@dataclasses.dataclass(frozen=True, kw_only=True)
class Seq2SeqConfig(DecodingSettings):
    """Hyperparameters of `build_seq2seq`.

    Args:
        family: always "seq2seq_attention".
        embedding_dim: size of the source and target token embeddings.
        cell: "gru" or "lstm" (encoder and decoder).
        encoder_units: units per direction of the bidirectional encoder.
        decoder_units: units of the decoder.
        attention_units: size of the additive attention's hidden layer (W₁, W₂, v).
        dropout: dropout on the embeddings and before the output layer.
        source_vocabulary_size, target_vocabulary_size: set by kpipe from the training split.
    """

    family: str = setting("seq2seq_attention", one_of(("seq2seq_attention",)))
    embedding_dim: int = setting(64, at_least(1))
    cell: str = setting("gru", one_of(CELL_CLASSES))
    encoder_units: int = setting(128, at_least(1))
    decoder_units: int = setting(256, at_least(1))
    attention_units: int = setting(128, at_least(1))
    dropout: float = setting(0.1, fraction())
    source_vocabulary_size: int = setting(64, at_least(SEQ2SEQ.count + 1), derived=True)
    target_vocabulary_size: int = setting(64, at_least(SEQ2SEQ.count + 1), derived=True)
