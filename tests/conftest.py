"""Shared fixtures. Synthetic data lives only here, in tests; no test touches the network."""

import os
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# Parsed word-vector files are cached per user (kpipe.vectors.cache): the tests' copies go to a
# folder of their own (subprocesses inherit it), not into the developer's ~/.cache.
os.environ.setdefault("KPIPE_CACHE_DIR", tempfile.mkdtemp(prefix="kpipe-test-cache-"))

import numpy as np
import pandas as pd
import pytest

POSITIVE = "good great fine lovely superb wonderful".split()
NEGATIVE = "bad awful poor terrible boring dreadful".split()
FILLER = "the a movie film plot actor scene it was and".split()


def synthetic_reviews(n: int, seed: int = 0) -> pd.DataFrame:
    """Short texts whose label is given by which sentiment words they contain (learnable in 1 epoch)."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        label = i % 2
        words = list(rng.choice(FILLER, rng.integers(2, 12))) + list(
            rng.choice(POSITIVE if label else NEGATIVE, rng.integers(1, 4)))
        rng.shuffle(words)
        rows.append((" ".join(words), label))
    return pd.DataFrame(rows, columns=["text", "label"])


@pytest.fixture
def reviews_csv(tmp_path):
    path = tmp_path / "reviews.csv"
    synthetic_reviews(400).to_csv(path, index=False)
    return path


@pytest.fixture
def in_tmp_cwd(tmp_path, monkeypatch):
    """Run in an empty working directory, so `saved_models/` lands in tmp_path."""
    monkeypatch.chdir(tmp_path)
    return tmp_path
