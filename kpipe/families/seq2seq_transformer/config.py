"""The `seq2seq_transformer` family's config, without TensorFlow (parsed and checked before TensorFlow loads)."""

from __future__ import annotations

import dataclasses

from kpipe.config.strict import DERIVED, check_choice, check_range
from kpipe.tokens import SEQ2SEQ


@dataclasses.dataclass(frozen=True, kw_only=True)
class Seq2SeqTransformerConfig:
    """Hyperparameters of `build_seq2seq_transformer`, the keras-io "English-to-Spanish translation with a
    sequence-to-sequence Transformer" recipe (its defaults: embedding 256, 8 heads, feed-forward 2,048, one
    encoder and one decoder layer).

    Args:
        family: always "seq2seq_transformer".
        embedding_dim: size of the token + position embeddings and of every layer.
        num_heads: attention heads (embedding_dim must divide by it).
        intermediate_dim: the feed-forward layers' hidden size.
        encoder_layers, decoder_layers: stacked keras-hub `TransformerEncoder` / `TransformerDecoder` layers.
        dropout: inside the transformer layers, and before the output layer.
        beam_width, length_penalty, average_epochs, ensemble_members: as `seq2seq_attention`'s.
        source_vocabulary_size, target_vocabulary_size, source_positions, target_positions: set by kpipe from
            the training split and `preprocessing.max_source_length` / `max_target_length`.
    """

    family: str = "seq2seq_transformer"
    embedding_dim: int = 256
    num_heads: int = 8
    intermediate_dim: int = 2048
    encoder_layers: int = 1
    decoder_layers: int = 1
    dropout: float = 0.1
    beam_width: int = 1
    length_penalty: float = 1.0
    average_epochs: int = 1
    ensemble_members: int = 1
    source_vocabulary_size: int = dataclasses.field(default=64, metadata=DERIVED)
    target_vocabulary_size: int = dataclasses.field(default=64, metadata=DERIVED)
    source_positions: int = dataclasses.field(default=64, metadata=DERIVED)
    target_positions: int = dataclasses.field(default=64, metadata=DERIVED)

    def __post_init__(self):
        check_choice("family", self.family, ("seq2seq_transformer",))
        for name in ("embedding_dim", "num_heads", "intermediate_dim", "encoder_layers", "decoder_layers",
                     "beam_width", "average_epochs", "ensemble_members", "source_positions", "target_positions"):
            check_range(name, getattr(self, name), low=1)
        if self.embedding_dim % self.num_heads:
            raise ValueError(f"`embedding_dim` ({self.embedding_dim}) must be a multiple of `num_heads` "
                             f"({self.num_heads})")
        check_range("dropout", self.dropout, low=0.0, high=1.0, high_inclusive=False)
        check_range("length_penalty", self.length_penalty, low=0.0)
        check_range("source_vocabulary_size", self.source_vocabulary_size, low=SEQ2SEQ.count + 1)
        check_range("target_vocabulary_size", self.target_vocabulary_size, low=SEQ2SEQ.count + 1)
