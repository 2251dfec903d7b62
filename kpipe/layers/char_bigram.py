"""Character bigram language model (NumPy): the baseline a character RNN has to beat.

P(c_t | c_{t-1}) = (count(c_{t-1}, c_t) + alpha) / (count(c_{t-1}) + alpha * V), with START before
the first character and END after the last, the same token ids as the RNN, and `alpha` chosen on
the validation names.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

ALPHAS = (0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0)


class CharBigram:
    def __init__(self, vocabulary_size: int, alpha: float = 0.01):
        self.vocabulary_size = vocabulary_size
        self.alpha = alpha
        self.counts = np.zeros((vocabulary_size, vocabulary_size))

    def fit(self, sequences: Sequence[Sequence[int]]) -> "CharBigram":
        """`sequences` are full id sequences [START, c1, ..., cn, END]."""
        for ids in sequences:
            np.add.at(self.counts, (np.asarray(ids[:-1]), np.asarray(ids[1:])), 1)
        return self

    def log_probabilities(self) -> np.ndarray:
        smoothed = self.counts + self.alpha
        return np.log(smoothed / smoothed.sum(axis=1, keepdims=True))

    def nll_per_char(self, sequences: Sequence[Sequence[int]]) -> float:
        """Mean negative log-likelihood (nats) over every predicted token (the characters and END)."""
        table = self.log_probabilities()
        total = count = 0
        for ids in sequences:
            ids = np.asarray(ids)
            total -= table[ids[:-1], ids[1:]].sum()
            count += len(ids) - 1
        return float(total / count)

    def choose_alpha(self, validation: Sequence[Sequence[int]], alphas=ALPHAS) -> float:
        """Set `alpha` to the value with the lowest validation NLL; returns it."""
        scores = {}
        for alpha in alphas:
            self.alpha = alpha
            scores[alpha] = self.nll_per_char(validation)
        self.alpha = min(scores, key=scores.get)
        return self.alpha
