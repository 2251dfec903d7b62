"""What the attention variants share: the multi-head projections, and attention by a kernel φ(q)·φ(k).

Every variant projects its input to queries, keys and values per head, attends, and projects the heads
back to the input's width; only the attending differs. `ProjectedAttention` owns the projections and
padding; a variant implements `attend(q, k, v, mask)` on (batch, time, heads, key_dim) tensors.

`kernel_attention` is the reordered sum of linearized attention (Katharopoulos et al. 2020):

    out_i = φ(q_i)ᵀ (Σ_j φ(k_j) v_jᵀ) / (φ(q_i)ᵀ Σ_j φ(k_j))

one pass over the keys builds a summary that every query reads, O(N) in the sequence length instead of
O(N²); causal attention (query i sees keys j ≤ i) keeps running sums instead (the "RNN" form).
"""

from __future__ import annotations

import keras
from keras import ops


def kernel_attention(q_features, k_features, v, causal: bool, epsilon, key_mask=None):
    """Σ_j κ(i, j) v_j / Σ_j κ(i, j) with κ(i, j) = φ(q_i)·φ(k_j), over unmasked keys (and j ≤ i if causal).

    Args:
        q_features, k_features: φ(q), φ(k): (batch, time, heads, features), non-negative.
        v: values (batch, time, heads, key_dim).
        key_mask: optional (batch, time) booleans, True for real tokens; padded keys add nothing.
        epsilon: added to the normaliser (a query whose features are all zero, or no unmasked key): a number,
            or a tensor broadcasting to (batch, time, heads).
    """
    if key_mask is not None:
        keep = ops.cast(key_mask, k_features.dtype)[:, :, None, None]
        k_features, v = k_features * keep, v * ops.cast(keep, v.dtype)
    if causal:
        # Running sums over time: S_i = Σ_{j≤i} φ(k_j) v_jᵀ (batch, time, heads, f, d), z_i = Σ_{j≤i} φ(k_j).
        summaries = ops.cumsum(ops.einsum("bthf,bthd->bthfd", k_features, v), axis=1)
        numerator = ops.einsum("bthf,bthfd->bthd", q_features, summaries)
        denominator = ops.sum(q_features * ops.cumsum(k_features, axis=1), axis=-1)
    else:
        summary = ops.einsum("bthf,bthd->bhfd", k_features, v)
        numerator = ops.einsum("bthf,bhfd->bthd", q_features, summary)
        denominator = ops.einsum("bthf,bhf->bth", q_features, ops.sum(k_features, axis=1))
    return numerator / (denominator + epsilon)[..., None]


class ProjectedAttention(keras.layers.Layer):
    """Multi-head self-attention's projections around a variant's `attend`.

    Args:
        num_heads: attention heads.
        key_dim: size of each head's queries, keys and values.
        causal: each position attends to itself and earlier positions only.
        epsilon: added to normalisers (see `kernel_attention`).

    Call args:
        inputs: (batch, time, features).
        mask: optional (batch, time) booleans, True for real tokens (Keras passes the embedding's mask).
            Padded keys contribute nothing; outputs at padded positions are computed but meaningless, and
            the mask is passed on.

    Returns:
        (batch, time, features): the heads' outputs projected back to the input's width.
    """

    def __init__(self, num_heads: int, key_dim: int, causal: bool = False, epsilon: float = 1e-6, **kwargs):
        super().__init__(**kwargs)
        self.num_heads, self.key_dim, self.causal, self.epsilon = num_heads, key_dim, causal, epsilon
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

    def _heads(self, x):
        return ops.reshape(x, (ops.shape(x)[0], ops.shape(x)[1], self.num_heads, self.key_dim))

    def attend(self, q, k, v, mask, training=None):
        """(batch, time, heads, key_dim) queries, keys and values → the heads' outputs, same shape."""
        raise NotImplementedError

    def call(self, inputs, mask=None, training=None):
        q, k, v = (self._heads(dense(inputs)) for dense in (self.query, self.key, self.value))
        heads = self.attend(q, k, v, mask, training=training)
        batch, time = ops.shape(inputs)[0], ops.shape(inputs)[1]
        return self.output_dense(ops.reshape(heads, (batch, time, self.num_heads * self.key_dim)))

    def compute_mask(self, inputs, mask=None):
        return mask

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "num_heads": self.num_heads, "key_dim": self.key_dim,
                "causal": self.causal, "epsilon": self.epsilon}
