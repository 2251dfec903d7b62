"""Pooling over time that skips padding: masked mean and masked max, (batch, time, dim) → (batch, dim).

Keras' `GlobalMaxPooling1D` ignores the mask (padding positions take part in the max), and its
`GlobalAveragePooling1D` divides by zero on an all-padding row; these two do neither.
"""

from __future__ import annotations

import keras
import numpy as np


class _MaskedTimePooling(keras.layers.Layer):
    """What both poolings share: they take the mask and hand none on, (batch, time, dim) → (batch, dim)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True

    def compute_mask(self, inputs, mask=None):
        return None

    def compute_output_shape(self, input_shape):
        return (input_shape[0], input_shape[2])


@keras.saving.register_keras_serializable(package="kpipe")
class MaskedMeanPooling(_MaskedTimePooling):
    """Mean over the time steps that are not padding: (batch, time, dim), mask → (batch, dim).

    An all-padding row (an empty text) gives zeros, not NaN.
    """

    def call(self, inputs, mask=None):
        if mask is None:
            return keras.ops.mean(inputs, axis=1)
        weights = keras.ops.cast(mask, inputs.dtype)[:, :, None]
        total = keras.ops.sum(inputs * weights, axis=1)
        return total / keras.ops.maximum(keras.ops.sum(weights, axis=1), keras.ops.cast(1.0, inputs.dtype))


@keras.saving.register_keras_serializable(package="kpipe")
class MaskedMaxPooling(_MaskedTimePooling):
    """Maximum over the time steps that are not padding: (batch, time, dim), mask → (batch, dim).

    An all-padding row (an empty text) gives zeros, not -inf.
    """

    def call(self, inputs, mask=None):
        if mask is None:
            return keras.ops.max(inputs, axis=1)
        keep = keras.ops.cast(mask, "bool")[:, :, None]
        # Padding positions take the smallest value of the dtype, so they never win the max.
        lowest = keras.ops.cast(float(np.finfo(keras.backend.standardize_dtype(inputs.dtype)).min), inputs.dtype)
        pooled = keras.ops.max(keras.ops.where(keep, inputs, lowest), axis=1)
        return keras.ops.where(keras.ops.any(keep, axis=1), pooled, keras.ops.zeros_like(pooled))
