"""Deterministic train/validation/test splits."""

from __future__ import annotations

import numpy as np

from kpipe.config import check_range


def split_indices(n: int, *, validation_fraction: float, test_fraction: float,
                  seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Shuffle `range(n)` with `seed` and cut it into train, validation and test index arrays.

    The same (n, fractions, seed) always gives the same split. Each non-zero fraction gets at
    least one example so small slices still have a validation and a test set.

    Returns:
        (train, validation, test): int64 arrays of indices, disjoint, covering range(n).
    """
    check_range("validation_fraction", validation_fraction, low=0.0, high=1.0, high_inclusive=False)
    check_range("test_fraction", test_fraction, low=0.0, high=1.0, high_inclusive=False)
    order = np.random.default_rng(seed).permutation(n)
    n_test = max(1, round(n * test_fraction)) if test_fraction > 0 else 0
    n_val = max(1, round(n * validation_fraction)) if validation_fraction > 0 else 0
    if n - n_test - n_val < 1:
        raise ValueError(f"{n} examples are too few to split into train/validation/test "
                         f"with validation_fraction={validation_fraction}, test_fraction={test_fraction}")
    return order[n_test + n_val:], order[n_test:n_test + n_val], order[:n_test]
