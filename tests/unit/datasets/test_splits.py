import numpy as np
import pytest

from kpipe.datasets.splits import split_indices


def test_split_is_deterministic_disjoint_and_complete():
    a = split_indices(100, validation_fraction=0.1, test_fraction=0.2, seed=7)
    b = split_indices(100, validation_fraction=0.1, test_fraction=0.2, seed=7)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    train, val, test = a
    assert (len(train), len(val), len(test)) == (70, 10, 20)
    assert sorted(np.concatenate(a).tolist()) == list(range(100))


def test_other_seed_gives_other_split():
    train_a, _, _ = split_indices(100, validation_fraction=0.1, test_fraction=0.1, seed=1)
    train_b, _, _ = split_indices(100, validation_fraction=0.1, test_fraction=0.1, seed=2)
    assert set(train_a) != set(train_b)


def test_tiny_data_still_gets_validation_and_test():
    train, val, test = split_indices(5, validation_fraction=0.1, test_fraction=0.1, seed=0)
    assert (len(train), len(val), len(test)) == (3, 1, 1)


def test_too_few_examples_is_an_error():
    with pytest.raises(ValueError, match="2 examples are too few"):
        split_indices(2, validation_fraction=0.1, test_fraction=0.1, seed=0)
