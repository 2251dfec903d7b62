"""Linearized multi-head self-attention (Katharopoulos et al. 2020, "Transformers are RNNs").

Softmax attention weighs value j for query i by exp(q_i·k_j/√d), which needs all N² pairs. Replacing the
exponential by a kernel φ(q_i)·φ(k_j) with a positive feature map φ lets the sums be reordered
(`kernel_attention`): O(N d²) instead of O(N² d).
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

    def get_config(self):
        return {**super().get_config(), "feature_map": self.feature_map}
