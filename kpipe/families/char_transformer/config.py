"""The `char_transformer` family's config, without TensorFlow (parsed and checked before TensorFlow loads)."""

from __future__ import annotations

import dataclasses

from kpipe.config.strict import DERIVED, check_choice, check_range
from kpipe.layers.settings import AttentionSettings, check_transformer_sizes
from kpipe.tokens import CHARS


@dataclasses.dataclass(frozen=True, kw_only=True)
class CharTransformerConfig(AttentionSettings):
    """Hyperparameters of `build_char_transformer`: a causal (decoder-only) transformer over characters.

    Args:
        family: always "char_transformer".
        hidden_dim: size of the character, position and category embeddings and of every layer.
        num_layers: stacked causal self-attention blocks.
        num_heads: attention heads per layer; must divide hidden_dim.
        intermediate_dim: width of each block's feed-forward layer.
        dropout: dropout in the blocks and on the embeddings.
        conditioning: "every_step" (the category's embedding is added at every position) or "none".
        attention and its settings: see `AttentionSettings`; every variant runs causally (masked).
        sequence_length, vocabulary_size, num_categories: set by kpipe from the preprocessing and data.
    """

    family: str = "char_transformer"
    hidden_dim: int = 128
    num_layers: int = 2
    num_heads: int = 4
    intermediate_dim: int = 256
    dropout: float = 0.1
    conditioning: str = "every_step"
    sequence_length: int = dataclasses.field(default=21, metadata=DERIVED)
    vocabulary_size: int = dataclasses.field(default=64, metadata=DERIVED)
    num_categories: int = dataclasses.field(default=1, metadata=DERIVED)

    def __post_init__(self):
        check_choice("family", self.family, ("char_transformer",))
        check_transformer_sizes(self)
        check_choice("conditioning", self.conditioning, ("none", "every_step"))
        self.check_attention()
        check_range("vocabulary_size", self.vocabulary_size, low=CHARS.count + 1)
        check_range("num_categories", self.num_categories, low=1)
