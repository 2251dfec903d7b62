"""Names as character ids for the name generators: the character vocabulary (ids after the reserved ones of
`kpipe.tokens.CHARS`) and the tf.data pipeline of (characters, category) -> next characters.
"""

from __future__ import annotations

import dataclasses
import functools
from collections import Counter
from typing import Sequence

import tensorflow as tf

from kpipe.preprocessing.configs import NamesPreprocessingConfig
from kpipe.preprocessing.prefetch import prefetched
from kpipe.tokens import CHARS


@dataclasses.dataclass(frozen=True)
class CharVocabulary:
    """Characters in id order from id 4 (0 padding, 1 start, 2 end, 3 unknown)."""

    chars: list[str]

    @classmethod
    def fit(cls, names: Sequence[str]) -> "CharVocabulary":
        counts = Counter(ch for name in names for ch in name)
        return cls(sorted(counts, key=lambda ch: (-counts[ch], ch)))

    @property
    def size(self) -> int:
        return CHARS.count + len(self.chars)

    @functools.cached_property
    def index(self) -> dict[str, int]:
        """character -> id (built once)."""
        return {ch: i + CHARS.count for i, ch in enumerate(self.chars)}

    def ids(self, text: str) -> list[int]:
        index = self.index
        return [index.get(ch, CHARS.unknown) for ch in text]


def prepare_name(name: str, pre: NamesPreprocessingConfig) -> str:
    return name.lower() if pre.lowercase else name


def name_sequences(pairs, vocabulary: CharVocabulary, pre: NamesPreprocessingConfig) -> list[list[int]]:
    return [[CHARS.start] + vocabulary.ids(prepare_name(n, pre)) + [CHARS.end] for n, _ in pairs]


def make_names_dataset(pairs, vocabulary: CharVocabulary, categories: list[str], pre: NamesPreprocessingConfig, *,
                       batch_size: int, shuffle: bool = False, seed: int = 0) -> tf.data.Dataset:
    """((chars_in (batch, time), category (batch,)), targets (batch, time)), right-padded with 0."""
    category_index = {c: i for i, c in enumerate(categories)}
    sequences = name_sequences(pairs, vocabulary, pre)
    inputs = tf.ragged.constant([s[:-1] for s in sequences], dtype=tf.int32)
    targets = tf.ragged.constant([s[1:] for s in sequences], dtype=tf.int32)
    category_ids = tf.constant([category_index.get(c, 0) for _, c in pairs], tf.int32)
    dataset = tf.data.Dataset.from_tensor_slices((inputs, category_ids, targets))
    if shuffle:
        dataset = dataset.shuffle(len(pairs), seed=seed, reshuffle_each_iteration=True)
    dataset = dataset.map(lambda x, c, y: ((x, c), y))
    return prefetched(dataset.padded_batch(batch_size, padded_shapes=(([None], []), [None])).map(
        lambda xc, y: ((tf.cast(xc[0], tf.int32), xc[1]), tf.cast(y, tf.int32))))
