"""`build_gpt`: a GPT-2-shaped causal language model from keras-hub's own parts (`GPT2Backbone` and
`GPT2CausalLM`, which brings `call_with_cache`: generation with key/value caches, one position per step), or the
same shape with linear attention (`linear.py`)."""

from __future__ import annotations

import keras
import keras_hub

from kpipe.families.gpt.config import GPTConfig
from kpipe.families.gpt.linear import build_linear_gpt


def build_gpt(config: GPTConfig) -> keras.Model:
    """token_ids, padding_mask (batch, length) -> next-token logits (batch, length, vocabulary); no preprocessor:
    kpipe tokenizes with its own learnt byte-level BPE. `attention = "linear"` builds `linear.build_linear_gpt`."""
    if config.attention == "linear":
        return build_linear_gpt(config)
    backbone = keras_hub.models.GPT2Backbone(
        vocabulary_size=config.vocabulary_size, num_layers=config.num_layers, num_heads=config.num_heads,
        hidden_dim=config.hidden_dim, intermediate_dim=config.intermediate_dim, dropout=config.dropout,
        max_sequence_length=config.max_sequence_length)
    return keras_hub.models.GPT2CausalLM(backbone=backbone, preprocessor=None, name="gpt")
