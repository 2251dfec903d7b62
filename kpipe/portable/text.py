"""Text preprocessing of kpipe's classifiers in NumPy and the standard library, equal to the TensorFlow ops the
SavedModel runs (pinned on a test split in tests/unit/portable/test_text.py):

    standardize   Keras' "lower_and_strip_punctuation" and "lower" (ASCII lower-casing, as `tf.strings.lower`
                  without an encoding), kpipe's "lower_and_split_punctuation" (Unicode lower-casing) and its
                  contractions variant, "none"
    split         on ASCII white space (`tf.strings.split`), or into characters
    WordIds       tokens -> ids of a vocabulary (0 padding, 1 unknown), cut as `truncating` says, right-padded
    NgramCounts   word (and character) n-gram counts of a fitted vocabulary, TF-IDF or binary weighted
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Sequence

import numpy as np

KERAS_STRIP = re.compile(r'[!"#$%&()\*\+,\-\./:;<=>?@\[\\\]^_`{|}~\']')
SPLIT_PUNCTUATION = re.compile(r"([^\w\t\n\f\r '])")  # RE2's \s is [\t\n\f\r ]; Python's \w is \p{L}\p{N}_
ASCII_SPACE = re.compile(r"[ \t\n\v\f\r]+")
ASCII_UPPER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
CHAR_PREFIX = "char:"  # the character n-grams in an n-gram vocabulary file (kpipe.preprocessing.ngrams)


def split_punctuation(text: str) -> str:
    return SPLIT_PUNCTUATION.sub(r" \1 ", text.lower())


def split_contractions(text: str) -> str:
    text = split_punctuation(text.replace("\u2019", "'"))
    text = re.sub(r"([^\W\d_])n't([\t\n\f\r ]|$)", r"\1 n't\2", text)
    return re.sub(r"([^\W\d_])'(s|m|re|ve|ll|d)([\t\n\f\r ]|$)", r"\1 '\2\3", text)


STANDARDIZE = {
    "lower_and_strip_punctuation": lambda t: KERAS_STRIP.sub("", t.translate(ASCII_UPPER)),
    "lower": lambda t: t.translate(ASCII_UPPER),
    "lower_and_split_punctuation": split_punctuation,
    "lower_and_split_punctuation_and_contractions": split_contractions,
    "none": lambda t: t,
}


def tokens(text: str, standardize: str, split: str = "whitespace") -> list[str]:
    """A text's tokens, as `keras.layers.TextVectorization(standardize=..., split=...)` makes them."""
    text = STANDARDIZE[standardize](text)
    return list(text) if split == "character" else [t for t in ASCII_SPACE.split(text) if t]


class WordIds:
    """Texts -> right-padded int32 ids (batch, time) of a `TextVectorization` vocabulary (0 "", 1 "[UNK]")."""

    def __init__(self, vocabulary: Sequence[str], *, standardize: str, split: str, sequence_length: int,
                 truncating: str):
        self.index = {token: i for i, token in enumerate(vocabulary) if i > 1}
        self.standardize, self.split = standardize, split
        self.sequence_length, self.truncating = sequence_length, truncating

    def ids(self, text: str) -> list[int]:
        """One text's ids, cut to `sequence_length` ("pre" keeps the end, "post" the start, "head_tail" the first
        quarter and the last three quarters)."""
        ids = [self.index.get(t, 1) for t in tokens(text, self.standardize, self.split)]
        n = self.sequence_length
        if len(ids) <= n:
            return ids
        if self.truncating == "pre":
            return ids[-n:]
        if self.truncating == "head_tail":
            head = n // 4
            return ids[:head] + ids[len(ids) - (n - head):]
        return ids[:n]

    def __call__(self, texts: Sequence[str], length: int | None = None) -> np.ndarray:
        """(batch, time) ids padded with 0 to `length`, or to the longest text (at least one column)."""
        rows = [self.ids(t) for t in texts]
        width = length or max(1, max((len(r) for r in rows), default=1))
        out = np.zeros((len(rows), width), np.int32)
        for i, row in enumerate(rows):
            out[i, :len(row)] = row
        return out


class NgramCounts:
    """Texts -> dense float32 (batch, features) n-gram features, as `kpipe.preprocessing.ngrams.NgramFeatures`:
    word 1- to n-grams of the standardized text, then (if the vocabulary has them) character 1- to m-grams of the
    ASCII-lower-cased text; each block's first feature is the unknown bucket (always 0); "tfidf" weighs a count c
    as (1 + ln c) * idf and scales each block of a row to unit L2 norm, "binary" sets 1."""

    def __init__(self, vocabulary: Sequence[str], idf: np.ndarray, *, standardize: str, split: str, ngrams: int,
                 char_ngrams: int, weighting: str):
        words = [v for v in vocabulary if not v.startswith(CHAR_PREFIX)]
        chars = [v[len(CHAR_PREFIX):].encode("ascii").decode("unicode_escape") for v in vocabulary
                 if v.startswith(CHAR_PREFIX)]
        self.word_index = {w: i for i, w in enumerate(words) if i > 0}
        self.char_index = {c: len(words) + i for i, c in enumerate(chars) if i > 0}
        self.word_size, self.size = len(words), len(words) + len(chars)
        self.idf = np.asarray(idf, np.float64)
        self.standardize, self.split, self.ngrams, self.char_ngrams = standardize, split, ngrams, char_ngrams
        self.weighting = weighting

    @staticmethod
    def _known(items: list[str], width: int, separator: str, index: dict) -> Counter:
        """Counts of the vocabulary's 1- to `width`-grams of `items`, by column (the n-grams built by zipping
        shifted copies of `items`, looked up once each: the hot loop of single-text requests)."""
        get = index.get
        found = list(map(get, items))
        for n in range(2, width + 1):
            found += map(get, map(separator.join, zip(*(items[k:] for k in range(n)))))
        return Counter([column for column in found if column is not None])

    def counts(self, text: str) -> tuple[Counter, Counter]:
        words = self._known(tokens(text, self.standardize, self.split), self.ngrams, " ", self.word_index)
        chars = Counter()
        if self.char_ngrams:
            chars = self._known(list(text.translate(ASCII_UPPER)), self.char_ngrams, "", self.char_index)
        return words, chars

    def features(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        """One text's non-zero features: (columns int64, values float64)."""
        columns, values = [], []
        for block in self.counts(text):
            if not block:
                continue
            block_columns = np.fromiter(block.keys(), np.int64, len(block))
            if self.weighting == "tfidf":
                block_values = np.log(np.fromiter(block.values(), np.float64, len(block))) + 1.0
                block_values *= self.idf[block_columns]
                norm = math.sqrt(float(np.dot(block_values, block_values)))
                block_values = block_values / norm if norm else block_values
            else:
                block_values = np.ones(len(block))
            columns.append(block_columns)
            values.append(block_values)
        if not columns:
            return np.zeros(0, np.int64), np.zeros(0)
        return np.concatenate(columns), np.concatenate(values)

    def sparse(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """(ids (batch, k) int32, values (batch, k) float32): each text's non-zero features, 0-padded to the
        batch's most (at least one column; a padded id 0 carries the value 0)."""
        rows = [self.features(t) for t in texts]
        width = max(1, max((len(c) for c, _ in rows), default=1))
        ids, values = np.zeros((len(rows), width), np.int32), np.zeros((len(rows), width), np.float32)
        for i, (c, v) in enumerate(rows):
            ids[i, :len(c)], values[i, :len(v)] = c, v
        return ids, values

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        """Dense (batch, features) float32: the SavedModel's features, for checking."""
        ids, values = self.sparse(texts)
        out = np.zeros((len(texts), self.size), np.float32)
        rows = np.repeat(np.arange(len(texts)), ids.shape[1])
        out[rows, ids.ravel()] = values.ravel()  # padding writes 0 into column 0, the unknown bucket (always 0)
        return out
