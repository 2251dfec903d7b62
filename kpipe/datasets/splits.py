"""Deterministic train/validation/test splits."""

from __future__ import annotations

import hashlib

import numpy as np

from kpipe.config.strict import check_range


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


def split_of_key(key: str, *, seed: int, validation_fraction: float, test_fraction: float) -> str:
    """"train", "validation" or "test" for `key`, from a seeded hash of it: every example sharing a
    key (all spellings of a name, all pronunciations of a word) lands in the same split, the same
    way on every machine and run."""
    u = int.from_bytes(hashlib.sha256(f"{seed}:{key}".encode("utf-8")).digest()[:8], "big") / 2 ** 64
    return "test" if u < test_fraction else "validation" if u < test_fraction + validation_fraction else "train"


def split_by_first_item(examples: list[tuple], *, seed: int, validation_fraction: float, test_fraction: float,
                        noun: str, source: str) -> dict[str, list[tuple]]:
    """Examples by split, keyed on each example's first item (`split_of_key`).

    Raises:
        DataError: train or test would be empty ("<source> has N <noun>: too few to split ...").
    """
    from kpipe.errors import DataError

    splits = {"train": [], "validation": [], "test": []}
    for example in examples:
        splits[split_of_key(example[0], seed=seed, validation_fraction=validation_fraction,
                            test_fraction=test_fraction)].append(example)
    if not splits["train"] or not splits["test"]:
        raise DataError(f"{source} has {len(examples)} {noun}: too few to split into train and test")
    return splits
