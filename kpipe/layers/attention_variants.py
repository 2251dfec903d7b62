"""The attention variants by name, and the transformer encoder block that takes any of them.

"softmax" is keras-hub's `TransformerEncoder` itself; the others are kpipe layers in keras-hub's block
(`VariantTransformerEncoder`), so a classifier switches attention with one config value.
"""

from __future__ import annotations

import keras

from kpipe.layers.fmm_attention import FMMAttention
from kpipe.layers.linear_attention import LinearAttention
from kpipe.layers.random_feature_attention import RandomFeatureAttention

ATTENTION_LAYERS = {"linear": LinearAttention, "random_features": RandomFeatureAttention, "fmm": FMMAttention}


def attention_layer(attention: str, num_heads: int, key_dim: int, causal: bool = False, name=None, **options):
    """A kpipe attention layer by name ("linear", "random_features", "fmm"); options go to its constructor."""
    if attention not in ATTENTION_LAYERS:
        raise ValueError(f"attention must be one of {tuple(ATTENTION_LAYERS)}. Received: attention={attention!r}")
    return ATTENTION_LAYERS[attention](num_heads, key_dim, causal=causal, name=name, **options)


@keras.saving.register_keras_serializable(package="kpipe")
class VariantTransformerEncoder(keras.layers.Layer):
    """keras-hub's `TransformerEncoder` block (post-norm: attention, add & norm, feed-forward, add & norm)
    with a kpipe attention variant in place of softmax attention; called the same way, `(x, padding_mask=...)`.

    Args:
        intermediate_dim, num_heads, dropout, layer_norm_epsilon: as keras-hub's `TransformerEncoder`.
        attention: "linear", "random_features" or "fmm".
        attention_options: passed to the attention layer (e.g. {"feature_map": "relu"}, {"num_features": 64},
            {"band_width": 16, "rank": 1}).
        causal: each position attends to itself and earlier ones only (a decoder-only block).
    """

    def __init__(self, intermediate_dim: int, num_heads: int, attention: str = "linear", dropout: float = 0.0,
                 attention_options: dict | None = None, causal: bool = False, layer_norm_epsilon: float = 1e-5,
                 **kwargs):
        super().__init__(**kwargs)
        self.intermediate_dim, self.num_heads, self.attention_name = intermediate_dim, num_heads, attention
        self.dropout, self.attention_options, self.causal = dropout, dict(attention_options or {}), causal
        self.layer_norm_epsilon = layer_norm_epsilon
        self.supports_masking = True

    def build(self, input_shape):
        hidden = input_shape[-1]
        self.attention = attention_layer(self.attention_name, self.num_heads, hidden // self.num_heads,
                                         causal=self.causal, name="self_attention", **self.attention_options)
        self.attention_norm = keras.layers.LayerNormalization(epsilon=self.layer_norm_epsilon,
                                                              name="self_attention_layer_norm")
        self.intermediate = keras.layers.Dense(self.intermediate_dim, activation="relu",
                                               name="feedforward_intermediate_dense")
        self.feedforward_output = keras.layers.Dense(hidden, name="feedforward_output_dense")
        self.feedforward_norm = keras.layers.LayerNormalization(epsilon=self.layer_norm_epsilon,
                                                                name="feedforward_layer_norm")
        self.dropout_layer = keras.layers.Dropout(self.dropout)
        self.attention.build(input_shape)
        self.attention_norm.build(input_shape)
        self.intermediate.build(input_shape)
        self.feedforward_output.build((*input_shape[:-1], self.intermediate_dim))
        self.feedforward_norm.build(input_shape)

    def call(self, inputs, padding_mask=None, training=None):
        attended = self.attention(inputs, mask=padding_mask, training=training)
        x = self.attention_norm(inputs + self.dropout_layer(attended, training=training))
        hidden = self.dropout_layer(self.intermediate(x), training=training)
        return self.feedforward_norm(x + self.dropout_layer(self.feedforward_output(hidden), training=training))

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "intermediate_dim": self.intermediate_dim, "num_heads": self.num_heads,
                "attention": self.attention_name, "dropout": self.dropout,
                "attention_options": self.attention_options, "causal": self.causal,
                "layer_norm_epsilon": self.layer_norm_epsilon}
