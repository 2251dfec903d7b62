"""An interpolated Kneser-Ney trigram model: the n-gram baseline every language model is measured against.

The formulas are NLTK's `KneserNeyInterpolated` (Chen and Goodman's interpolation: each order's discounted counts
plus the discounted mass times the next lower order; the lower orders count continuations, the number of distinct
words seen before, not occurrences), pinned equal to it in tests/unit/evaluation/test_kneser_ney.py. NLTK's model
is exact but slow (it rescans every n-gram for each continuation count), so the counts are kept here in
dictionaries. Two departures by default, both so that the probabilities of every token sum to one (tested):
NLTK gives a token never seen in training probability zero (an infinite perplexity), so the unigram level keeps
Chen and Goodman's interpolation with the uniform distribution over the vocabulary; and NLTK's middle order scales
its lower-order mass by the bigram types after v, where the continuation counts it discounts need the types that
continue v inside a trigram (the two differ after the padding). `nltk_compatible=True` drops both.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from typing import Iterable, Sequence


class KneserNeyTrigram:
    """p(w | u, v) by interpolated Kneser-Ney, fitted on sequences of tokens (any hashable: ids, strings).

    Args:
        discount: D, subtracted from every count (0 < D < 1).
        vocabulary_size: tokens the model can be asked about (the uniform floor's 1 / V); needed unless
            `nltk_compatible`.
        nltk_compatible: NLTK's formulas exactly (see the module's note); no vocabulary_size needed.
    """

    def __init__(self, discount: float = 0.75, vocabulary_size: int = 0, nltk_compatible: bool = False):
        if not 0 < discount < 1:
            raise ValueError(f"discount must be in (0, 1). Received: {discount}")
        if not nltk_compatible and vocabulary_size < 1:
            raise ValueError("the model needs the vocabulary_size (the uniform floor's 1 / V)")
        self.discount, self.vocabulary_size, self.nltk_compatible = discount, vocabulary_size, nltk_compatible
        self.trigrams: Counter = Counter()                 # c(u v w)
        self.context_total: Counter = Counter()            # c(u v .)
        self.context_types: Counter = Counter()            # N1+(u v .)
        self.bigram_types: Counter = Counter()             # N1+(v .), from the bigram counts
        self.middle_continuations: Counter = Counter()     # N1+(. v w)
        self.middle_total: Counter = Counter()             # N1+(. v .)
        self.middle_types: Counter = Counter()             # N1+(v w) > 0 counted over w: the types continuing v
        self.unigram_continuations: Counter = Counter()    # N1+(. w)
        self.bigram_type_count = 0                         # N1+(. .)

    def fit(self, sequences: Iterable[Sequence]) -> "KneserNeyTrigram":
        """Count the bigrams and trigrams of `sequences` (each already padded as it will be scored)."""
        bigrams: set = set()
        followers: defaultdict = defaultdict(set)
        for sequence in sequences:
            sequence = list(sequence)
            bigrams.update(zip(sequence, sequence[1:]))
            self.trigrams.update(zip(sequence, sequence[1:], sequence[2:]))
        for (u, v, w), count in self.trigrams.items():
            self.context_total[u, v] += count
            self.context_types[u, v] += 1
            self.middle_continuations[v, w] += 1
            self.middle_total[v] += 1
        for v, _ in self.middle_continuations:
            self.middle_types[v] += 1
        for v, w in bigrams:
            followers[v].add(w)
            self.unigram_continuations[w] += 1
        self.bigram_types = Counter({v: len(ws) for v, ws in followers.items()})
        self.bigram_type_count = len(bigrams)
        return self

    def unigram(self, w) -> float:
        total, seen = self.bigram_type_count, self.unigram_continuations[w]
        if self.nltk_compatible:
            return seen / total
        distinct = len(self.unigram_continuations)
        return max(seen - self.discount, 0.0) / total + self.discount * distinct / total / self.vocabulary_size

    def bigram(self, w, v) -> float:
        total = self.middle_total[v]
        if not self.bigram_types[v] or not total:  # a context never seen: all to the lower order
            return self.unigram(w)
        alpha = max(self.middle_continuations[v, w] - self.discount, 0.0) / total
        types = self.bigram_types[v] if self.nltk_compatible else self.middle_types[v]
        gamma = self.discount * types / total
        return alpha + gamma * self.unigram(w)

    def probability(self, w, context: tuple) -> float:
        """p(w | context), context the two tokens before w."""
        u, v = context
        total = self.context_total[u, v]
        if not total:
            return self.bigram(w, v)
        alpha = max(self.trigrams[u, v, w] - self.discount, 0.0) / total
        gamma = self.discount * self.context_types[u, v] / total
        return alpha + gamma * self.bigram(w, v)

    def log_likelihood(self, sequence: Sequence, start: int = 2) -> float:
        """The sum of ln p(token | the two before it) over `sequence[start:]` (nats)."""
        return sum(math.log(self.probability(sequence[i], (sequence[i - 2], sequence[i - 1])))
                   for i in range(start, len(sequence)))
