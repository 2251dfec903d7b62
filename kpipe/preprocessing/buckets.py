"""Length buckets: batch sequences of similar length together, so a batch pads to little more than
its own length (`tf.data.Dataset.bucket_by_sequence_length`), with boundaries at length quantiles."""

from __future__ import annotations

import numpy as np


def quantile_boundaries(lengths: np.ndarray, buckets: int, max_length: int) -> list[int]:
    """Length-bucket boundaries at quantiles of `lengths` (cut to `max_length`), for
    `tf.data.Dataset.bucket_by_sequence_length`: an element of length L goes to the first bucket
    whose boundary is > L. Returns [] when `buckets` <= 1 or the lengths are too uniform to need it.
    """
    if buckets <= 1 or len(lengths) == 0:
        return []
    lengths = np.minimum(lengths, max_length)
    quantiles = np.quantile(lengths, np.linspace(0, 1, buckets + 1)[1:-1])
    return sorted({int(q) + 1 for q in quantiles if 1 <= q < max_length})
