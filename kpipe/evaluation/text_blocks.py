"""The baselines' bag of words for one text or a pair of texts: one scikit-learn vectorizer per text column.

A pair (premise and hypothesis, evidence and claim) becomes two blocks side by side, each with its own
vocabulary and idf, as in the classic NLI baselines: the linear model then weighs a word in the first text
apart from the same word in the second.
"""

from __future__ import annotations

from typing import Callable

import numpy as np


class TextBlocks:
    """`make()` -> a fresh vectorizer (e.g. `TfidfVectorizer(...)`), fitted once per text column.

    A vectorizer whose `min_df` keeps no n-gram (tiny data: every n-gram occurs once) is refitted keeping all.
    """

    def __init__(self, make: Callable[[], object]):
        self.make = make
        self.vectorizers: list = []

    @staticmethod
    def columns(texts) -> list[list[str]]:
        texts = np.asarray(texts, dtype=object)
        return [list(texts)] if texts.ndim == 1 else [list(texts[:, j]) for j in range(texts.shape[1])]

    def fit_transform(self, texts):
        blocks = []
        self.vectorizers = []
        for column in self.columns(texts):
            vectorizer = self.make()
            try:
                blocks.append(vectorizer.fit_transform(column))
            except ValueError:
                vectorizer.set_params(min_df=1)
                blocks.append(vectorizer.fit_transform(column))
            self.vectorizers.append(vectorizer)
        return self._stack(blocks)

    def transform(self, texts):
        return self._stack([v.transform(c) for v, c in zip(self.vectorizers, self.columns(texts))])

    @staticmethod
    def _stack(blocks):
        from scipy.sparse import hstack

        return blocks[0] if len(blocks) == 1 else hstack(blocks, format="csr")
