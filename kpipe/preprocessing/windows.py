"""Sliding windows over a series on tf.data, with scaling fitted on the training split only.

A window at origin t pairs the inputs `values[t - window : t]` (all features) with the targets
`target[t : t + horizon]`. Windows of a split have all their *targets* inside that split; their
inputs may reach back into the previous split, which is the past and known at forecast time.
"""

from __future__ import annotations

import dataclasses

import keras
import numpy as np
import tensorflow as tf

from kpipe.datasets.time_series import TimeSeries
from kpipe.errors import DataError
from kpipe.preprocessing.configs import WindowConfig
from kpipe.preprocessing.prefetch import prefetched


@dataclasses.dataclass(frozen=True)
class Scaler:
    """Per-feature standardisation: `(x - mean) / scale`, fitted on the training rows only."""

    mean: np.ndarray   # (features,) float32
    scale: np.ndarray  # (features,) float32

    @classmethod
    def fit(cls, values: np.ndarray) -> "Scaler":
        std = values.std(axis=0)
        return cls(values.mean(axis=0).astype(np.float32), np.where(std > 0, std, 1.0).astype(np.float32))

    def transform(self, values: np.ndarray) -> np.ndarray:
        return ((values - self.mean) / self.scale).astype(np.float32)

    def inverse_target(self, scaled: np.ndarray) -> np.ndarray:
        """Scaled target values (feature 0) back to original units."""
        return scaled * self.scale[0] + self.mean[0]


def split_origins(series: TimeSeries, split: str, config: WindowConfig) -> np.ndarray:
    """Forecast origins t whose targets `[t, t + horizon)` lie inside `split` and whose inputs exist."""
    start, end = {"train": (0, series.train_end), "validation": (series.train_end, series.validation_end),
                  "test": (series.validation_end, len(series))}[split]
    first = max(start, config.window)
    origins = np.arange(first, end - config.horizon + 1)
    if len(origins) == 0:
        raise DataError(f"the {split} split ({end - start} steps) has no room for a window of {config.window} "
                        f"steps followed by a horizon of {config.horizon}; use a longer series, a larger "
                        f"{split} fraction, or a shorter window/horizon")
    return origins


def make_window_dataset(scaled: np.ndarray, origins: np.ndarray, config: WindowConfig, *, batch_size: int,
                        shuffle: bool = False, seed: int = 0, stride: int = 1) -> tf.data.Dataset:
    """Batched ((batch, window, features), (batch, horizon)) pairs for consecutive `origins`.

    Built with `keras.utils.timeseries_dataset_from_array` over sequences of window + horizon steps,
    each split into its inputs and its target part.
    """
    first, last = int(origins[0]), int(origins[-1])
    length = config.window + config.horizon
    block = scaled[first - config.window:last + config.horizon]
    dataset = keras.utils.timeseries_dataset_from_array(
        block, targets=None, sequence_length=length, sequence_stride=stride, batch_size=batch_size,
        shuffle=shuffle, seed=seed if shuffle else None)
    window = config.window
    return prefetched(dataset.map(lambda seq: (seq[:, :window, :], seq[:, window:, 0]),
                                  num_parallel_calls=tf.data.AUTOTUNE))


def window_arrays(values: np.ndarray, origins: np.ndarray, config: WindowConfig) -> tuple[np.ndarray, np.ndarray]:
    """The same pairs as NumPy arrays (inputs (n, window, features), targets (n, horizon)), for evaluation."""
    steps = np.arange(-config.window, 0)
    inputs = values[origins[:, None] + steps[None, :]]
    targets = values[origins[:, None] + np.arange(config.horizon)[None, :], 0]
    return inputs, targets
