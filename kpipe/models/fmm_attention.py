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

from kpipe.models.kernel_attention import ProjectedAttention, kernel_attention
from kpipe.models.linear_attention import feature_map

FAR_FIELD_FEATURE_MAPS = ("elu", "elu_negated")
_MASKED = -1e9  # score of a key outside the band or padded: exp() of it is 0 next to any real score


def banded_softmax_attention(q, k, v, band_width: int, causal: bool, key_mask=None):
    """Softmax attention where query i sees only keys j with |i − j| ≤ band_width (j ≤ i too, if causal).

    Each query gathers its window of 2·band_width + 1 keys (band_width + 1 if causal): memory and time
    O(N · band_width), never the N × N score matrix. q, k, v: (batch, time, heads, key_dim).
    """
    time = ops.shape(k)[1]
    last_offset = 0 if causal else band_width
    window = band_width + last_offset + 1
    padding = [[0, 0], [band_width, last_offset], [0, 0], [0, 0]]
    # Position t + o of the padded keys is key t + o − band_width: the window of query t, o = 0 … window − 1.
    positions = ops.arange(time)[:, None] + ops.arange(window)[None, :]
    k_windows = ops.take(ops.pad(k, padding), positions, axis=1)  # (batch, time, window, heads, key_dim)
    v_windows = ops.take(ops.pad(v, padding), positions, axis=1)
    real = ops.ones(ops.shape(k)[:2], dtype="bool") if key_mask is None else ops.cast(key_mask, "bool")
    real_windows = ops.take(ops.pad(real, [[0, 0], [band_width, last_offset]], constant_values=False), positions,
                            axis=1)  # (batch, time, window): False outside the sequence and on padding
    scores = ops.einsum("bthd,btwhd->bthw", q, k_windows) / math.sqrt(q.shape[-1])
    scores = ops.where(real_windows[:, :, None, :], scores, ops.cast(_MASKED, scores.dtype))
    return ops.einsum("bthw,btwhd->bthd", ops.softmax(scores, axis=-1), v_windows)


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
