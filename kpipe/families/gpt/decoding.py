"""How a `gpt` model generates (the contract is `kpipe.families.lm_decoding`'s): `CachedDecoder` through keras-hub's
`GPT2CausalLM.call_with_cache` (the keys and values of earlier positions kept: one position of work per token, over
a cache that grows with the text); `LinearDecoder` through linear attention's recurrent form (a fixed-size state)."""

from __future__ import annotations

import keras
import keras_hub
import tensorflow as tf

from kpipe.families.gpt.config import GPTConfig
from kpipe.families.lm_decoding import StateDecoder


class CachedDecoder:
    """Key/value caches of shape (batch, layers, 2, length, heads, head width), one slot per position."""

    def __init__(self, model: keras_hub.models.GPT2CausalLM, config=None):
        self.model = model
        self.vocabulary_size = model.backbone.vocabulary_size

    def empty_cache(self, token_ids):
        backbone = self.model.backbone
        shape = [tf.shape(token_ids)[0], backbone.num_layers, 2, tf.shape(token_ids)[1], backbone.num_heads,
                 backbone.hidden_dim // backbone.num_heads]
        return tf.zeros(shape, self.model.compute_dtype)

    def prefill(self, token_ids, count, cache):
        """The whole buffer in one pass (cheaper than `count` steps); the steps overwrite positions from `count`."""
        _, _, cache = self.model.call_with_cache(token_ids, cache, 0)
        return cache

    def step(self, token, cache, index):
        logits, hidden, cache = self.model.call_with_cache(token, cache, index)
        return logits[:, 0, :], hidden[:, 0, :], cache


class LinearDecoder(StateDecoder):
    """`attention = "linear"`: the cache is each block's running sums, of a size that does not grow with the text."""

    def __init__(self, model: keras.Model, config: GPTConfig):
        self.config = config
        self.vocabulary_size = config.vocabulary_size
        self.embedding = model.get_layer("token_embedding")
        self.positions = model.get_layer("position_embedding")
        self.blocks = [model.get_layer(f"block_{i}") for i in range(config.num_layers)]
        self.final_norm = model.get_layer("final_norm")

    def empty_cache(self, token_ids):
        return [block.attention.initial_state(tf.shape(token_ids)[0]) for block in self.blocks]

    def _embedded(self, token_ids, start):
        tokens = self.embedding(token_ids)
        return tokens + self.positions(tokens, start_index=start)

    def prefill(self, token_ids, count, cache):
        """The first `count` tokens in one parallel pass, each block's state summed over them."""
        x, states = self._embedded(token_ids[:, :count], 0), []
        for block, state in zip(self.blocks, cache):
            state, x = block.state_of(x, state)
            states.append(state)
        return states

    def step(self, token, cache, index):
        x, states = self._embedded(token, index)[:, 0], []
        for block, state in zip(self.blocks, cache):
            x, state = block.step(x, state)
            states.append(state)
        hidden = self.final_norm(x)
        return tf.cast(self.embedding(hidden, reverse=True), tf.float32), hidden, states


def gpt_decoder(model: keras.Model, config: GPTConfig):
    """The decoder of a `gpt` model: key/value caches for softmax attention, running sums for linear attention."""
    return LinearDecoder(model, config) if config.attention == "linear" else CachedDecoder(model, config)
