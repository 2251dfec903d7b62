"""Linearized multi-head self-attention (Katharopoulos et al. 2020, "Transformers are RNNs").

Softmax attention weighs value j for query i by exp(q_i·k_j/√d), which needs all N² pairs. Replacing the
exponential by a kernel φ(q_i)·φ(k_j) with a positive feature map φ lets the sums be reordered:

    out_i = φ(q_i)ᵀ (Σ_j φ(k_j) v_jᵀ) / (φ(q_i)ᵀ Σ_j φ(k_j))

so one pass over the keys builds a d×d summary and every query reads it: O(N d²) instead of O(N² d).
Causal attention (query i sees keys j ≤ i) keeps running sums instead, the "RNN" form.

Padded keys (mask False) are dropped by zeroing their φ(k) and v, so they add nothing to either sum;
outputs at padded query positions are computed but meaningless, and the mask is passed on.
"""

from __future__ import annotations

import keras
from keras import ops

from kpipe.models.configs import LINEAR_ATTENTION_FEATURE_MAPS as FEATURE_MAPS


@keras.saving.register_keras_serializable(package="kpipe")
class LinearAttention(keras.layers.Layer):
    """Self-attention with a kernel feature map instead of the softmax.

    Args:
        num_heads: attention heads.
        key_dim: size of each head's queries, keys and values.
        feature_map: φ: "elu" (elu(x) + 1, the paper's) or "relu".
        causal: each position attends to itself and earlier positions only.
        epsilon: added to the normaliser (a query whose features are all zero, or no unmasked key).

    Call args:
        inputs: (batch, time, features).
        mask: optional (batch, time) booleans, True for real tokens (Keras passes the embedding's mask).

    Returns:
        (batch, time, features): the heads' outputs projected back to the input's width.
    """

    def __init__(self, num_heads: int, key_dim: int, feature_map: str = "elu", causal: bool = False,
                 epsilon: float = 1e-6, **kwargs):
        super().__init__(**kwargs)
        if feature_map not in FEATURE_MAPS:
            raise ValueError(f"feature_map must be one of {FEATURE_MAPS}. Received: feature_map={feature_map!r}")
        self.num_heads, self.key_dim, self.feature_map = num_heads, key_dim, feature_map
        self.causal, self.epsilon = causal, epsilon
        self.supports_masking = True

    def build(self, input_shape):
        width = self.num_heads * self.key_dim
        self.query = keras.layers.Dense(width, name="query")
        self.key = keras.layers.Dense(width, name="key")
        self.value = keras.layers.Dense(width, name="value")
        self.output_dense = keras.layers.Dense(input_shape[-1], name="output")
        for dense in (self.query, self.key, self.value):
            dense.build(input_shape)
        self.output_dense.build((*input_shape[:-1], width))

    def _features(self, x):
        return ops.elu(x) + 1.0 if self.feature_map == "elu" else ops.relu(x)

    def _heads(self, x):
        batch, time = ops.shape(x)[0], ops.shape(x)[1]
        return ops.reshape(x, (batch, time, self.num_heads, self.key_dim))

    def call(self, inputs, mask=None):
        q = self._features(self._heads(self.query(inputs)))
        k = self._features(self._heads(self.key(inputs)))
        v = self._heads(self.value(inputs))
        if mask is not None:
            keep = ops.cast(mask, k.dtype)[:, :, None, None]
            k, v = k * keep, v * keep
        if self.causal:
            # Running sums over time: S_i = Σ_{j≤i} φ(k_j) v_jᵀ (batch, time, heads, d, d), z_i = Σ_{j≤i} φ(k_j).
            summaries = ops.cumsum(ops.einsum("bthd,bthe->bthde", k, v), axis=1)
            normalisers = ops.cumsum(k, axis=1)
            numerator = ops.einsum("bthd,bthde->bthe", q, summaries)
            denominator = ops.sum(q * normalisers, axis=-1)
        else:
            summary = ops.einsum("bthd,bthe->bhde", k, v)
            numerator = ops.einsum("bthd,bhde->bthe", q, summary)
            denominator = ops.einsum("bthd,bhd->bth", q, ops.sum(k, axis=1))
        heads = numerator / (denominator[..., None] + self.epsilon)
        batch, time = ops.shape(inputs)[0], ops.shape(inputs)[1]
        return self.output_dense(ops.reshape(heads, (batch, time, self.num_heads * self.key_dim)))

    def compute_mask(self, inputs, mask=None):
        return mask

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "num_heads": self.num_heads, "key_dim": self.key_dim,
                "feature_map": self.feature_map, "causal": self.causal, "epsilon": self.epsilon}


@keras.saving.register_keras_serializable(package="kpipe")
class LinearTransformerEncoder(keras.layers.Layer):
    """keras-hub's `TransformerEncoder` block (post-norm: attention, add & norm, feed-forward, add & norm)
    with `LinearAttention` in place of softmax attention; called the same way, `(x, padding_mask=...)`."""

    def __init__(self, intermediate_dim: int, num_heads: int, dropout: float = 0.0, feature_map: str = "elu",
                 layer_norm_epsilon: float = 1e-5, **kwargs):
        super().__init__(**kwargs)
        self.intermediate_dim, self.num_heads, self.dropout = intermediate_dim, num_heads, dropout
        self.feature_map, self.layer_norm_epsilon = feature_map, layer_norm_epsilon
        self.supports_masking = True

    def build(self, input_shape):
        hidden = input_shape[-1]
        self.attention = LinearAttention(self.num_heads, hidden // self.num_heads, feature_map=self.feature_map,
                                         name="self_attention")
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
        attended = self.attention(inputs, mask=padding_mask)
        x = self.attention_norm(inputs + self.dropout_layer(attended, training=training))
        hidden = self.dropout_layer(self.intermediate(x), training=training)
        return self.feedforward_norm(x + self.dropout_layer(self.feedforward_output(hidden), training=training))

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "intermediate_dim": self.intermediate_dim, "num_heads": self.num_heads,
                "dropout": self.dropout, "feature_map": self.feature_map,
                "layer_norm_epsilon": self.layer_norm_epsilon}
