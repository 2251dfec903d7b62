"""Linearized multi-head self-attention (Katharopoulos et al. 2020, "Transformers are RNNs").

Softmax attention weighs value j for query i by exp(q_i·k_j/√d), which needs all N² pairs. Replacing the
exponential by a kernel φ(q_i)·φ(k_j) with a positive feature map φ lets the sums be reordered
(`kernel_attention`): O(N d²) instead of O(N² d). Causal, the sums run over time: `step` is that recurrent form, one token at a time
from a state (S = Σ φ(k) vᵀ, z = Σ φ(k)) whose size does not grow with the text, and `state_of` the state after a
whole sequence in one pass.
"""

from __future__ import annotations

import keras
from keras import ops

from kpipe.layers.settings import LINEAR_ATTENTION_FEATURE_MAPS as FEATURE_MAPS
from kpipe.layers.kernel_attention import ProjectedAttention, kernel_attention


def feature_map(name: str, x):
    """φ(x): "elu" → elu(x) + 1 (the paper's), "relu" → relu(x), "elu_negated" → elu(−x) + 1."""
    if name == "elu":
        return ops.elu(x) + 1.0
    if name == "elu_negated":
        return ops.elu(-x) + 1.0
    return ops.relu(x)


@keras.saving.register_keras_serializable(package="kpipe")
class LinearAttention(ProjectedAttention):
    """Self-attention with a kernel feature map instead of the softmax.

    Args:
        num_heads, key_dim, causal, epsilon: as `ProjectedAttention`.
        feature_map: φ: "elu" (elu(x) + 1, the paper's) or "relu".
    """

    def __init__(self, num_heads: int, key_dim: int, feature_map: str = "elu", causal: bool = False,
                 epsilon: float = 1e-6, **kwargs):
        super().__init__(num_heads, key_dim, causal=causal, epsilon=epsilon, **kwargs)
        if feature_map not in FEATURE_MAPS:
            raise ValueError(f"feature_map must be one of {FEATURE_MAPS}. Received: feature_map={feature_map!r}")
        self.feature_map = feature_map

    def attend(self, q, k, v, mask, training=None):
        return kernel_attention(feature_map(self.feature_map, q), feature_map(self.feature_map, k), v,
                                self.causal, self.epsilon, key_mask=mask)

    # === The recurrent form (causal) ===

    def initial_state(self, batch):
        """S (batch, heads, key_dim, key_dim) and z (batch, heads, key_dim), zero: no key read yet."""
        return (ops.zeros((batch, self.num_heads, self.key_dim, self.key_dim), self.compute_dtype),
                ops.zeros((batch, self.num_heads, self.key_dim), self.compute_dtype))

    def step(self, x, state):
        """One position: x (batch, features) and the state before it -> the output at it (what `call` gives at
        that position of a causal sequence) and the state after it."""
        batch = ops.shape(x)[0]
        q, k, v = (ops.reshape(dense(x), (batch, self.num_heads, self.key_dim))
                   for dense in (self.query, self.key, self.value))
        q_features, k_features = feature_map(self.feature_map, q), feature_map(self.feature_map, k)
        summary, normaliser = state
        summary = summary + ops.einsum("bhf,bhd->bhfd", k_features, v)
        normaliser = normaliser + k_features
        heads = ops.einsum("bhf,bhfd->bhd", q_features, summary) / (
            ops.sum(q_features * normaliser, axis=-1) + self.epsilon)[..., None]
        return self.output_dense(ops.reshape(heads, (batch, self.num_heads * self.key_dim))), (summary, normaliser)

    def state_of(self, inputs, state):
        """The state after reading all of `inputs` (batch, time, features) from `state`, in one pass."""
        k, v = (self._heads(dense(inputs)) for dense in (self.key, self.value))
        k_features = feature_map(self.feature_map, k)
        summary, normaliser = state
        return (summary + ops.einsum("bthf,bthd->bhfd", k_features, v), normaliser + ops.sum(k_features, axis=1))

    def get_config(self):
        return {**super().get_config(), "feature_map": self.feature_map}
