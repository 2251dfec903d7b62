"""The `seq2seq_transformer` family's config, without TensorFlow (parsed and checked before TensorFlow loads)."""

from __future__ import annotations

import dataclasses

from kpipe.config.constraints import Checked, at_least, fraction, one_of, setting
from kpipe.tokens import SEQ2SEQ


@dataclasses.dataclass(frozen=True, kw_only=True)
class Seq2SeqTransformerConfig(Checked):
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

    family: str = setting("seq2seq_transformer", one_of(("seq2seq_transformer",)))
    embedding_dim: int = setting(256, at_least(1))
    num_heads: int = setting(8, at_least(1))
    intermediate_dim: int = setting(2048, at_least(1))
    encoder_layers: int = setting(1, at_least(1))
    decoder_layers: int = setting(1, at_least(1))
    dropout: float = setting(0.1, fraction())
    beam_width: int = setting(1, at_least(1))
    length_penalty: float = setting(1.0, at_least(0.0))
    average_epochs: int = setting(1, at_least(1))
    ensemble_members: int = setting(1, at_least(1))
    source_vocabulary_size: int = setting(64, at_least(SEQ2SEQ.count + 1), derived=True)
    target_vocabulary_size: int = setting(64, at_least(SEQ2SEQ.count + 1), derived=True)
    source_positions: int = setting(64, at_least(1), derived=True)
    target_positions: int = setting(64, at_least(1), derived=True)

    def __post_init__(self):
        super().__post_init__()
        if self.embedding_dim % self.num_heads:
            raise ValueError(f"`embedding_dim` ({self.embedding_dim}) must be a multiple of `num_heads` "
                             f"({self.num_heads})")
