"""The `seq2seq_transformer` family's config, without TensorFlow (parsed and checked before TensorFlow loads)."""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from kpipe.config.constraints import at_least, fraction, one_of, setting
from kpipe.config.decoding import DecodingSettings
from kpipe.layers.settings import check_heads_divide_width
from kpipe.tokens import SEQ2SEQ


@dataclasses.dataclass(frozen=True, kw_only=True)
class Seq2SeqTransformerConfig(DecodingSettings):
    """Hyperparameters of `build_seq2seq_transformer`, the keras-io "English-to-Spanish translation with a
    sequence-to-sequence Transformer" recipe (its defaults: embedding 256, 8 heads, feed-forward 2,048, one
    encoder and one decoder layer).

    Args:
        family: always "seq2seq_transformer".
        hidden_dim: size of the token + position embeddings and of every layer (`embedding_dim` before
            2026-12-05: still read, with a warning).
        num_heads: attention heads per layer; must divide hidden_dim.
        intermediate_dim: the feed-forward layers' hidden size.
        encoder_layers, decoder_layers: stacked keras-hub `TransformerEncoder` / `TransformerDecoder` layers.
        dropout: inside the transformer layers, and before the output layer.
        source_vocabulary_size, target_vocabulary_size, source_positions, target_positions: set by kpipe from
            the training split and `preprocessing.max_source_length` / `max_target_length`.
    """

    # old key -> (new key, why): every transformer config names its sizes alike
    RENAMED_KEYS: ClassVar[dict[str, tuple[str, str]]] = {
        "embedding_dim": ("hidden_dim", "the name every transformer config gives its width")}

    family: str = setting("seq2seq_transformer", one_of(("seq2seq_transformer",)))
    hidden_dim: int = setting(256, at_least(1))
    num_heads: int = setting(8, at_least(1))
    intermediate_dim: int = setting(2048, at_least(1))
    encoder_layers: int = setting(1, at_least(1))
    decoder_layers: int = setting(1, at_least(1))
    dropout: float = setting(0.1, fraction())
    source_vocabulary_size: int = setting(64, at_least(SEQ2SEQ.count + 1), derived=True)
    target_vocabulary_size: int = setting(64, at_least(SEQ2SEQ.count + 1), derived=True)
    source_positions: int = setting(64, at_least(1), derived=True)
    target_positions: int = setting(64, at_least(1), derived=True)

    def __post_init__(self):
        super().__post_init__()
        check_heads_divide_width(self)
