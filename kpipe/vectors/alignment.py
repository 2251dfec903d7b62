"""Pretrained word vectors aligned to a model's vocabulary (an embedding matrix: known words get their vector,
others a random row of the same scale), and how much of the vocabulary they cover.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Sequence

import numpy as np

from kpipe.vectors.word_vectors import WordVectors

log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class Coverage:
    """How much of a vocabulary the vectors cover."""

    hits: int
    exact: int
    case_fallback: int
    misses: int
    top_missing: list[str]  # most frequent first (vocabularies are ordered by frequency)

    def as_dict(self) -> dict:
        return dataclasses.asdict(self) | {"hit_rate": self.hits / max(1, self.hits + self.misses)}


def align_to_vocabulary(vectors: WordVectors, vocabulary: Sequence[str], *, seed: int = 0,
                        reserved: int = 2, show_missing: int = 20) -> tuple[np.ndarray, Coverage]:
    """An embedding matrix for `vocabulary` (row i = token id i) from pretrained vectors.

    Words are looked up exactly, then lower-cased, capitalized and upper-cased (vocabularies are
    usually lower case, some vectors, like glove.840B, are cased). Missing words get random vectors drawn from
    a normal with the pretrained vectors' own mean and standard deviation, so they start at the same
    scale; the first `reserved` ids (padding "" and "[UNK]") are zeros.

    Returns:
        (matrix float32 (len(vocabulary), dim), coverage counted over the non-reserved words).
    """
    rng = np.random.default_rng(seed)
    mean, std = float(vectors.matrix.mean()), float(vectors.matrix.std())
    matrix = rng.normal(mean, std, size=(len(vocabulary), vectors.dim)).astype(np.float32)
    matrix[:reserved] = 0.0
    exact = fallback = 0
    missing = []
    words = list(vocabulary[reserved:])
    for i, (word, row) in enumerate(zip(words, vectors.rows(words)), start=reserved):
        if row is None:
            missing.append(word)
            continue
        matrix[i] = vectors.matrix[row]
        if vectors.words[row] == word:
            exact += 1
        else:
            fallback += 1
    coverage = Coverage(exact + fallback, exact, fallback, len(missing), missing[:show_missing])
    log.info("Pretrained vectors cover %d of %d vocabulary words (%.1f%%); most frequent missing: %s",
             coverage.hits, coverage.hits + coverage.misses, 100 * coverage.as_dict()["hit_rate"],
             ", ".join(coverage.top_missing[:10]))
    return matrix, coverage
