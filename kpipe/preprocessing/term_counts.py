"""Vocabularies counted over a stream in bounded memory: the terms Keras' `TextVectorization.adapt` would count
(the same standardization, split and n-grams), for data too large to adapt on.

`adapt` keeps one counter per distinct term it has seen: a corpus of millions of reviews has tens of millions of
distinct word pairs. `TermCounts` keeps at most `capacity` of them, by lossy counting (Manku & Motwani 2002):
each batch's terms are counted in TensorFlow (`tf.unique_with_counts`), merged into NumPy arrays keyed by a
64-bit fingerprint of the term, and when the table outgrows twice its capacity, the least frequent terms are
dropped. A term dropped and seen again restarts from zero, so its kept count can be short by at most what had
been dropped before it entered the table (`error` then, the sum of the largest count dropped at each pruning).
A kept term is certainly in the vocabulary when its count beats every bound of a term left out; the log says
how many are not. Ties are broken as Keras breaks them (the term's bytes, high
to low), so on data that never fills the table the vocabulary equals `adapt`'s, term for term.
"""

from __future__ import annotations

import logging

import numpy as np
import tensorflow as tf

log = logging.getLogger(__name__)
FINGERPRINT_BUCKETS = (1 << 63) - 1  # FarmHash fingerprints: a collision among 10 million terms has odds ~1e-5


class TermCounts:
    """Counts of a `TextVectorization` layer's terms over batches of texts, in at most about 2 x `capacity`
    terms (each ~80 bytes: its fingerprint, count and bytes)."""

    def __init__(self, vectorizer, capacity: int = 1_000_000, merge_every: int = 2_000_000):
        self.vectorizer = vectorizer
        self.capacity = capacity
        self.merge_every = merge_every       # terms buffered (with repeats across batches) before a merge
        self.keys = np.zeros(0, np.int64)    # sorted fingerprints
        self.counts = np.zeros(0, np.int64)
        self.terms = np.zeros(0, object)     # bytes
        self.short_by = np.zeros(0, np.int64)  # the most each kept count can be short by (`error` when it entered)
        self.error = 0                       # the most a term entering now can have lost to earlier prunings
        self.pruned = 0                      # distinct terms dropped (some may be counted again later)
        self._pending: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self._pending_size = 0
        self._batch_counts = tf.function(lambda texts: _batch_counts(vectorizer, texts),
                                         input_signature=[tf.TensorSpec([None], tf.string)])

    def update(self, texts: tf.Tensor) -> None:
        """Count the terms of a batch of strings, (batch,)."""
        keys, counts, terms = self._batch_counts(tf.reshape(texts, [-1]))
        self._pending.append((keys.numpy(), counts.numpy(), terms.numpy()))
        self._pending_size += len(keys)
        if self._pending_size >= self.merge_every:
            self._merge()

    def _merge(self) -> None:
        if not self._pending:
            return
        keys = np.concatenate([self.keys, *(k for k, _, _ in self._pending)])
        counts = np.concatenate([self.counts, *(c for _, c, _ in self._pending)])
        terms = np.concatenate([self.terms, *(t for _, _, t in self._pending)])
        self._pending, self._pending_size = [], 0
        self.keys, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
        inverse = inverse.reshape(-1)
        self.counts = np.bincount(inverse, weights=counts, minlength=len(self.keys)).astype(np.int64)
        self.terms = terms[first]
        short_by = np.full(len(self.keys), self.error, np.int64)  # new terms; kept ones keep their own bound
        short_by[inverse[:len(self.short_by)]] = self.short_by
        self.short_by = short_by
        if len(self.keys) > 2 * self.capacity:
            self._prune()

    def _prune(self) -> None:
        keep = np.sort(np.argpartition(-self.counts, self.capacity)[:self.capacity])
        dropped = np.ones(len(self.keys), bool)
        dropped[keep] = False
        self.error += int(self.counts[dropped].max())
        self.pruned += int(dropped.sum())
        self.keys, self.counts, self.terms = self.keys[keep], self.counts[keep], self.terms[keep]
        self.short_by = self.short_by[keep]

    def most_frequent(self, count: int | None) -> tuple[list[str], int]:
        """The `count` (None: all) most frequent terms, most frequent first (ties: bytes high to low, as Keras), and
        how many of them might not belong (a term left out could be as frequent): 0 = certainly the true top."""
        self._merge()
        order = np.lexsort((self.terms.astype(bytes), self.counts))[::-1][:count]
        top = [t.decode("utf-8", "replace") for t in self.terms[order]]
        if self.pruned == 0:
            return top, 0
        # A term left out has a true count of at most its kept count + its bound, or `error` if it is not kept at
        # all; a kept one, at least its kept count.
        outside = np.ones(len(self.counts), bool)
        outside[order] = False
        bound = max(self.error, int((self.counts + self.short_by)[outside].max()) if outside.any() else 0)
        return top, int((self.counts[order] <= bound).sum())

    def describe(self) -> str:
        if not self.pruned:
            return f"{len(self.keys)} distinct terms, every one counted"
        return (f"{len(self.keys)} terms kept of more seen ({self.pruned} dropped as rare while counting; a kept "
                f"count is short by at most {self.error})")


def _batch_counts(vectorizer, texts):
    # The layer's own preprocessing (standardize, split, n-grams), then each distinct term and its count.
    terms = vectorizer._preprocess(texts)  # noqa: SLF001 (Keras' adapt counts exactly these; pinned by a test)
    if isinstance(terms, tf.RaggedTensor):
        terms = terms.flat_values
    terms, _, counts = tf.unique_with_counts(tf.reshape(terms, [-1]), out_idx=tf.int64)
    return tf.strings.to_hash_bucket_fast(terms, FINGERPRINT_BUCKETS), counts, terms


def counted_vocabularies(vectorizers: list, batches, *, capacity: int = 1_000_000) -> list[list[str]]:
    """The learned vocabularies (no padding or out-of-vocabulary entries) of `TextVectorization` layers, from
    bounded counts over one pass of `batches` of strings (any iterable of string tensors), each truncated to its
    layer's `max_tokens` as `adapt` truncates it. Call each layer's `set_vocabulary` on its result."""
    counters = [TermCounts(vectorizer, capacity) for vectorizer in vectorizers]
    for texts in batches:
        for counter in counters:
            counter.update(texts)
    vocabularies = []
    for vectorizer, counter in zip(vectorizers, counters):
        limit = vectorizer._max_tokens  # noqa: SLF001
        # Entries that are not learned terms: padding (int output only) and the out-of-vocabulary token.
        reserved = 2 if vectorizer._output_mode == "int" else 1  # noqa: SLF001
        top, uncertain = counter.most_frequent(None if limit is None else limit - reserved)
        log.info("%s: counted over every training row, %s; the %d most frequent kept (%s)", vectorizer.name,
                 counter.describe(), len(top), "certainly the most frequent" if not uncertain else
                 f"{uncertain} of them near the cut, where a term left out may be as frequent")
        vocabularies.append(top)
    return vocabularies
