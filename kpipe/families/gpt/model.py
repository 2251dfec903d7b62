"""`build_gpt`: a GPT-2-shaped causal language model from keras-hub's own parts (`GPT2Backbone` and
`GPT2CausalLM`, which brings `call_with_cache`: generation with key/value caches, one position per step), or, with
`attention = "linear"`, the same shape with kpipe's causal `LinearAttention` in place of the softmax (Katharopoulos
et al. 2020): trained in parallel like any transformer, generated from as an RNN, each block carrying its
attention's running sums (`LinearDecoderBlock.step`), so every new token costs the same however long the text."""

from __future__ import annotations

import keras
import keras_hub

from kpipe.families.gpt.config import GPTConfig
from kpipe.layers.linear_attention import LinearAttention

NORM_EPSILON = 1e-5  # GPT-2's


def build_gpt(config: GPTConfig) -> keras.Model:
    """token_ids, padding_mask (batch, length) -> next-token logits (batch, length, vocabulary); no preprocessor:
    kpipe tokenizes with its own learnt byte-level BPE. `attention = "linear"` builds `build_linear_gpt`."""
    if config.attention == "linear":
        return build_linear_gpt(config)
    backbone = keras_hub.models.GPT2Backbone(
        vocabulary_size=config.vocabulary_size, num_layers=config.num_layers, num_heads=config.num_heads,
        hidden_dim=config.hidden_dim, intermediate_dim=config.intermediate_dim, dropout=config.dropout,
        max_sequence_length=config.max_sequence_length)
    return keras_hub.models.GPT2CausalLM(backbone=backbone, preprocessor=None, name="gpt")



@keras.saving.register_keras_serializable(package="kpipe")
class LinearDecoderBlock(keras.layers.Layer):
    """x + attention(norm(x)), then + feed-forward(norm(x)); causal linear attention over the right-padded mask."""

    def __init__(self, num_heads: int, intermediate_dim: int, dropout: float = 0.0, **kwargs):
        super().__init__(**kwargs)
        self.num_heads, self.intermediate_dim, self.dropout = num_heads, intermediate_dim, dropout

    def build(self, input_shape):
        width = input_shape[-1]
        self.attention_norm = keras.layers.LayerNormalization(epsilon=NORM_EPSILON, name="attention_norm")
        self.attention = LinearAttention(self.num_heads, width // self.num_heads, causal=True, name="attention")
        self.feedforward_norm = keras.layers.LayerNormalization(epsilon=NORM_EPSILON, name="feedforward_norm")
        self.feedforward_in = keras.layers.Dense(self.intermediate_dim, activation="gelu", name="feedforward_in")
        self.feedforward_out = keras.layers.Dense(width, name="feedforward_out")
        self.dropout_layer = keras.layers.Dropout(self.dropout)
        for layer in (self.attention_norm, self.attention, self.feedforward_norm, self.feedforward_in):
            layer.build(input_shape)
        self.feedforward_out.build((*input_shape[:-1], self.intermediate_dim))

    def _feedforward(self, x, training=None):
        return x + self.dropout_layer(self.feedforward_out(self.feedforward_in(self.feedforward_norm(x))),
                                      training=training)

    def call(self, x, padding_mask=None, training=None):
        attended = self.attention(self.attention_norm(x), mask=padding_mask, training=training)
        return self._feedforward(x + self.dropout_layer(attended, training=training), training)

    def step(self, x, state):
        """One position (batch, width) and the attention's state before it -> the block's output there, the state
        after it (what `call` computes at that position, as a recurrence)."""
        attended, state = self.attention.step(self.attention_norm(x), state)
        return self._feedforward(x + attended), state

    def state_of(self, x, state):
        """The attention's state after reading all of x (batch, time, width), and the block's outputs on x."""
        return self.attention.state_of(self.attention_norm(x), state), self(x)

    def get_config(self):
        return {**super().get_config(), "num_heads": self.num_heads, "intermediate_dim": self.intermediate_dim,
                "dropout": self.dropout}


def build_linear_gpt(config: GPTConfig) -> keras.Model:
    """{token_ids, padding_mask} (batch, length) -> next-token logits (batch, length, vocabulary), float32."""
    token_ids = keras.Input((None,), dtype="int32", name="token_ids")
    padding_mask = keras.Input((None,), dtype="bool", name="padding_mask")
    embedding = keras_hub.layers.ReversibleEmbedding(config.vocabulary_size, config.hidden_dim,
                                                     name="token_embedding")
    tokens = embedding(token_ids)
    positions = keras_hub.layers.PositionEmbedding(config.max_sequence_length, name="position_embedding")(tokens)
    x = keras.layers.Dropout(config.dropout, name="embeddings_dropout")(keras.layers.Add()([tokens, positions]))
    for i in range(config.num_layers):
        x = LinearDecoderBlock(config.num_heads, config.intermediate_dim, config.dropout,
                               name=f"block_{i}")(x, padding_mask=padding_mask)
    x = keras.layers.LayerNormalization(epsilon=NORM_EPSILON, name="final_norm")(x)
    logits = keras.layers.Activation("linear", dtype="float32", name="logits")(embedding(x, reverse=True))
    return keras.Model({"token_ids": token_ids, "padding_mask": padding_mask}, logits, name="gpt_linear")
