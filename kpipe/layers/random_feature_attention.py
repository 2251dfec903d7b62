"""Attention by positive random features (Performer's FAVOR+, Choromanski et al. 2021; Rahimi & Recht 2007).

Softmax attention weighs value j for query i by exp(q·k) (q and k scaled by d^-¼, so q·k is the usual
q_i·k_j/√d). With w drawn from N(0, I), E[exp(w·q − |q|²/2) exp(w·k − |k|²/2)] = exp(q·k), so the features

    φ(x) = exp(W x − |x|²/2) / √m        (W: m random rows)

give φ(q)·φ(k) ≈ exp(q·k), an unbiased estimate whose error shrinks like 1/√m, and attention becomes the
O(N) reordered sum of `kernel_attention`. The features are positive, so the normaliser never cancels out.
The Gaussian kernel exp(−|q − k|²/2) = exp(−|q|²/2) exp(q·k) exp(−|k|²/2) takes φ(x) = exp(W x − |x|²) / √m.

W is drawn once when the layer is built (rows orthogonal in blocks of d, the lower-variance estimator, with
Gaussian row norms) and saved with the weights, so a loaded model computes what the trained one did; with
redraw = "every_step" each training step draws a new W (the last one drawn is kept for inference).
"""

from __future__ import annotations

import math

import keras
from keras import ops

from kpipe.layers.settings import RANDOM_FEATURE_KERNELS, RANDOM_FEATURE_REDRAWS
from kpipe.layers.kernel_attention import ProjectedAttention, kernel_attention


@keras.saving.register_keras_serializable(package="kpipe")
class RandomFeatureAttention(ProjectedAttention):
    """Self-attention approximating the softmax (or Gaussian) kernel with positive random features.

    Args:
        num_heads, key_dim, causal, epsilon: as `ProjectedAttention`.
        num_features: m, the random features per head (more: closer to exact attention, cost O(N m d)).
        kernel: "softmax" (exp(q·k/√d), what softmax attention uses) or "gaussian" (exp(−|q − k|²/(2√d))).
        redraw: "never" (W fixed when built) or "every_step" (a new W at every training step).
        orthogonal: draw W's rows orthogonal in blocks of key_dim (else i.i.d. Gaussian).
        seed: seed of the draws.
    """

    def __init__(self, num_heads: int, key_dim: int, num_features: int = 256, kernel: str = "softmax",
                 redraw: str = "never", orthogonal: bool = True, seed: int | None = None, causal: bool = False,
                 epsilon: float = 1e-6, **kwargs):
        super().__init__(num_heads, key_dim, causal=causal, epsilon=epsilon, **kwargs)
        if kernel not in RANDOM_FEATURE_KERNELS:
            raise ValueError(f"kernel must be one of {RANDOM_FEATURE_KERNELS}. Received: kernel={kernel!r}")
        if redraw not in RANDOM_FEATURE_REDRAWS:
            raise ValueError(f"redraw must be one of {RANDOM_FEATURE_REDRAWS}. Received: redraw={redraw!r}")
        if num_features < 1:
            raise ValueError(f"num_features must be at least 1. Received: num_features={num_features}")
        self.num_features, self.kernel, self.redraw = num_features, kernel, redraw
        self.orthogonal, self.seed = orthogonal, seed

    def build(self, input_shape):
        super().build(input_shape)
        self.seed_generator = keras.random.SeedGenerator(self.seed, name="projection_seed")
        self.projection = self.add_weight(shape=(self.num_features, self.key_dim), initializer="zeros",
                                          trainable=False, name="projection")
        self.projection.assign(self.draw_projection())

    def draw_projection(self):
        """A new W: (num_features, key_dim)."""
        m, d = self.num_features, self.key_dim
        if not self.orthogonal:
            return keras.random.normal((m, d), seed=self.seed_generator)
        blocks = math.ceil(m / d)
        q, r = ops.linalg.qr(keras.random.normal((blocks, d, d), seed=self.seed_generator))  # one batched QR
        # Signs of R's diagonal: without them QR's convention tilts every row one way (a biased estimate);
        # with them the rows are uniformly random directions (Mezzadri 2007).
        q = q * ops.sign(ops.diagonal(r, axis1=-2, axis2=-1))[:, None, :]
        rows = ops.reshape(ops.transpose(q, (0, 2, 1)), (blocks * d, d))[:m]  # d orthonormal rows per block
        # Orthonormal rows have norm 1; Gaussian rows have chi-distributed norms: give them those.
        norms = ops.sqrt(ops.sum(ops.square(keras.random.normal((m, d), seed=self.seed_generator)), axis=1))
        return rows * norms[:, None]

    def _log_features(self, x):
        """log(φ(x)·√m): W x − |x|²/2 (softmax) or W x − |x|² (Gaussian), for x scaled by d^-¼."""
        x = x * (self.key_dim ** -0.25)
        projected = ops.einsum("bthd,md->bthm", x, ops.cast(self.projection, x.dtype))
        squared = ops.sum(ops.square(x), axis=-1, keepdims=True)
        return projected - (squared / 2.0 if self.kernel == "softmax" else squared)

    def attend(self, q, k, v, mask, training=None):
        if training and self.redraw == "every_step":
            self.projection.assign(self.draw_projection())
        log_q, log_k = self._log_features(q), self._log_features(k)
        # Shifts against overflow: a factor shared by all of one query's features, or by all keys of one text
        # and head, cancels between numerator and denominator. Padded keys are left out of the key maximum, so
        # loud padding cannot push the real keys' features to zero. The guard epsilon is rescaled by the same
        # factors so that it, too, acts as in the unshifted formula: otherwise a causal query's output would
        # move (by ~1e-4) when a later key changed the key maximum.
        query_shift = ops.stop_gradient(ops.max(log_q, axis=-1, keepdims=True))
        real_keys = log_k if mask is None else ops.where(mask[:, :, None, None], log_k, float("-inf"))
        key_shift = ops.stop_gradient(ops.max(real_keys, axis=(1, 3), keepdims=True))
        key_shift = ops.where(ops.isfinite(key_shift), key_shift, ops.zeros_like(key_shift))  # no real key
        scale = 1.0 / math.sqrt(self.num_features)
        q_features = ops.exp(log_q - query_shift) * scale
        k_features = ops.exp(log_k - key_shift) * scale
        epsilon = self.epsilon * ops.exp(-(query_shift + key_shift))[..., 0]  # inf (→ output 0) only as e^-88 → 0
        return kernel_attention(q_features, k_features, v, self.causal, epsilon, key_mask=mask)

    def get_config(self):
        return {**super().get_config(), "num_features": self.num_features, "kernel": self.kernel,
                "redraw": self.redraw, "orthogonal": self.orthogonal, "seed": self.seed}
