"""FMMformer attention (Nguyen et al. 2021): banded near field + low-rank far field, like the fast multipole method.

Trained attention maps are mostly a band around the diagonal (nearby tokens) plus something smooth (far
tokens). FMMformer models the first exactly and the second cheaply:

    out = w_near · softmax attention restricted to |i − j| ≤ band_width        (O(N · band))
        + w_far  · mean over r feature maps φ of linear attention with φ         (O(N), rank r)

with w_near, w_far two learned positive weights (softplus of a trainable pair). The far field's feature maps
are elu(x) + 1 and, for rank 2, elu(−x) + 1 (the FMMformer code's first two; its third, tanh, can make the
normaliser vanish, so it is left out). Causal: the band is j ∈ [i − band_width, i] and the far field the
running-sum form.
"""

from __future__ import annotations

import math

import keras
from keras import ops

from kpipe.layers.kernel_attention import ProjectedAttention, kernel_attention
from kpipe.layers.linear_attention import feature_map

FAR_FIELD_FEATURE_MAPS = ("elu", "elu_negated")
_MASKED = -1e9  # score of a key outside the band or padded: exp() of it is 0 next to any real score


def banded_softmax_attention(q, k, v, band_width: int, causal: bool, key_mask=None):
    """Softmax attention where query i sees only keys j with |i − j| ≤ band_width (j ≤ i too, if causal).

    Cut into blocks of band_width positions, a query's band lies within its own block and the blocks on either
    side (the one before, if causal): each block of queries attends to those 3 (2) blocks of keys with dense
    matrix products and a fixed band mask, so time and memory are O(N · band_width), never N × N.
    q, k, v: (batch, time, heads, key_dim).
    """
    block = max(band_width, 1)
    batch, time, heads, key_dim = ops.shape(q)[0], ops.shape(q)[1], q.shape[2], q.shape[3]
    blocks = (time + block - 1) // block
    pad = blocks * block - time
    real = ops.ones((batch, time), dtype="bool") if key_mask is None else ops.cast(key_mask, "bool")

    def by_block(x):  # (batch, time, ...) → (batch, blocks, block, ...), padded at the end
        x = ops.pad(x, [[0, 0], [0, pad]] + [[0, 0]] * (len(x.shape) - 2))
        return ops.reshape(x, (batch, blocks, block, *x.shape[2:]))

    def with_neighbours(x):  # (batch, blocks, block, ...) → (batch, blocks, 3·block or 2·block, ...)
        x = ops.pad(x, [[0, 0], [1, 1]] + [[0, 0]] * (len(x.shape) - 2))  # an empty block on each side
        parts = [x[:, :-2], x[:, 1:-1]] + ([] if causal else [x[:, 2:]])
        return ops.concatenate(parts, axis=2)

    k_context, v_context = with_neighbours(by_block(k)), with_neighbours(by_block(v))
    real_context = with_neighbours(by_block(real))  # (batch, blocks, context): False on padding and outside
    # Query i of a block and context key j are (j − block) − i positions apart.
    context = 2 * block if causal else 3 * block
    offset = ops.arange(context)[None, :] - block - ops.arange(block)[:, None]
    band = (ops.abs(offset) <= band_width) & ((offset <= 0) if causal else True)  # (block, context)
    scores = ops.einsum("bnqhd,bnkhd->bnhqk", by_block(q), k_context) / math.sqrt(key_dim)
    allowed = band[None, None, None, :, :] & real_context[:, :, None, None, :]
    scores = ops.where(allowed, scores, ops.cast(_MASKED, scores.dtype))
    out = ops.einsum("bnhqk,bnkhd->bnqhd", ops.softmax(scores, axis=-1), v_context)
    return ops.reshape(out, (batch, blocks * block, heads, key_dim))[:, :time]


@keras.saving.register_keras_serializable(package="kpipe")
class FMMAttention(ProjectedAttention):
    """Near-field (banded softmax) plus far-field (low-rank linear) self-attention, mixed by learned weights.

    Args:
        num_heads, key_dim, causal, epsilon: as `ProjectedAttention`.
        band_width: how far apart a query and a key may be in the near field.
        rank: feature maps in the far field, 1 or 2 (see the module's docstring).
    """

    def __init__(self, num_heads: int, key_dim: int, band_width: int = 8, rank: int = 2, causal: bool = False,
                 epsilon: float = 1e-6, **kwargs):
        super().__init__(num_heads, key_dim, causal=causal, epsilon=epsilon, **kwargs)
        if band_width < 0:
            raise ValueError(f"band_width must be 0 or more. Received: band_width={band_width}")
        if rank not in range(1, len(FAR_FIELD_FEATURE_MAPS) + 1):
            raise ValueError(f"rank must be 1 or 2. Received: rank={rank}")
        self.band_width, self.rank = band_width, rank

    def build(self, input_shape):
        super().build(input_shape)
        # softplus(-0.4328) = 0.5: the two fields start equally weighted, summing to 1.
        self.field_weights = self.add_weight(shape=(2,), initializer=keras.initializers.Constant(-0.4328),
                                             name="field_weights")

    def mixing_weights(self):
        """(w_near, w_far), both positive."""
        weights = ops.softplus(self.field_weights)
        return weights[0], weights[1]

    def attend(self, q, k, v, mask, training=None):
        near = banded_softmax_attention(q, k, v, self.band_width, self.causal, key_mask=mask)
        far = sum(kernel_attention(feature_map(name, q), feature_map(name, k), v, self.causal, self.epsilon,
                                   key_mask=mask)
                  for name in FAR_FIELD_FEATURE_MAPS[:self.rank]) / self.rank
        w_near, w_far = self.mixing_weights()
        return ops.cast(w_near, near.dtype) * near + ops.cast(w_far, far.dtype) * far

    def get_config(self):
        return {**super().get_config(), "band_width": self.band_width, "rank": self.rank}
