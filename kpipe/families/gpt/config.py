"""The `gpt` family's config, without TensorFlow (parsed and checked before TensorFlow loads)."""

from __future__ import annotations

import dataclasses

from kpipe.config.strict import DERIVED, check_choice, check_range

ATTENTION = ("softmax", "linear")


@dataclasses.dataclass(frozen=True, kw_only=True)
class GPTConfig:
    """Hyperparameters of `build_gpt`: GPT-2's decoder (keras-hub's `GPT2Backbone`: token and learnt position
    embeddings, pre-norm causal decoder blocks, the output tied to the token embedding), sized from scratch.

    Args:
        family: always "gpt".
        num_layers: decoder blocks.
        num_heads: attention heads per block (hidden_dim must be a multiple of it).
        hidden_dim: width of the token embedding and of every block.
        intermediate_dim: width of each block's feed-forward layer (4 x hidden_dim in GPT-2).
        dropout: dropout inside the blocks and on the embeddings.
        attention: "softmax" (keras-hub's GPT-2 blocks; generation with key/value caches) or "linear" (kpipe's
            causal `LinearAttention`, elu + 1 features; generation through its recurrent form, a fixed cost per
            token however long the text).
        vocabulary_size, max_sequence_length: set by kpipe from the tokenizer and preprocessing.sequence_length.
    """

    family: str = "gpt"
    num_layers: int = 2
    num_heads: int = 4
    hidden_dim: int = 128
    intermediate_dim: int = 512
    dropout: float = 0.1
    attention: str = "softmax"
    vocabulary_size: int = dataclasses.field(default=8000, metadata=DERIVED)
    max_sequence_length: int = dataclasses.field(default=128, metadata=DERIVED)

    def __post_init__(self):
        for name in ("num_layers", "num_heads", "hidden_dim", "intermediate_dim"):
            check_range(name, getattr(self, name), low=1)
        check_range("dropout", self.dropout, low=0.0, high=1.0, high_inclusive=False)
        check_choice("attention", self.attention, ATTENTION)
        if self.hidden_dim % self.num_heads:
            raise ValueError(f"`hidden_dim` must be a multiple of `num_heads`. Received: hidden_dim={self.hidden_dim}, "
                             f"num_heads={self.num_heads}")
