"""The `gpt` family's config, without TensorFlow (parsed and checked before TensorFlow loads)."""

from __future__ import annotations

import dataclasses

from kpipe.config.constraints import one_of, setting
from kpipe.layers.settings import TransformerSizes

ATTENTION = ("softmax", "linear")


@dataclasses.dataclass(frozen=True, kw_only=True)
class GPTConfig(TransformerSizes):
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

    family: str = setting("gpt", one_of(("gpt",)))
    attention: str = setting("softmax", one_of(ATTENTION))
    vocabulary_size: int = setting(8000, derived=True)
    max_sequence_length: int = setting(128, derived=True)
