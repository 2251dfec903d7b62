"""The `char_transformer` family's config, without TensorFlow (parsed and checked before TensorFlow loads)."""

from __future__ import annotations

import dataclasses

from kpipe.config.constraints import at_least, group_default, one_of, setting
from kpipe.layers.settings import AttentionSettings, TransformerSizes
from kpipe.tokens import CHARS


@dataclasses.dataclass(frozen=True, kw_only=True)
class CharTransformerConfig(TransformerSizes, AttentionSettings):
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

    family: str = setting("char_transformer", one_of(("char_transformer",)))
    intermediate_dim: int = group_default(TransformerSizes, "intermediate_dim", 256)
    conditioning: str = setting("every_step", one_of(("none", "every_step")))
    sequence_length: int = setting(21, at_least(1), derived=True)
    vocabulary_size: int = setting(64, at_least(CHARS.count + 1), derived=True)
    num_categories: int = setting(1, at_least(1), derived=True)
