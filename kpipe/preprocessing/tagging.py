"""Words -> a tagger's inputs, in TensorFlow ops (the same function feeds training and runs inside the export):
word ids (0 padding, 1 unknown), character ids (0 padding, 1 unknown) and a casing class per word; and raw text ->
words with their character offsets, the tokenization of the export's `serving_default`.

The tokenization: a word is a run of letters, digits, underscores, @ and # (handles and hashtags stay whole); every
other character but a space is a word of its own ("Obama's" -> "Obama", "'", "s"; "U.S." -> "U", ".", "S", ".").
CoNLL's files are closer to the Penn Treebank's ("U.S.", "'s"); `tag_tokens` takes words split the corpus's way.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import tensorflow as tf

from kpipe.preprocessing.configs import TaggingPreprocessingConfig
from kpipe.preprocessing.prefetch import prefetched

PAD, UNKNOWN = 0, 1
# Casing classes (id 0: padding), tested in this order: the first that matches.
CASING_PATTERNS = (
    ("numeric", r"[0-9][0-9.,:/\-]*"),
    ("has_digit", r".*[0-9].*"),  # "2nd", "F16"
    ("all_lower", r"[^\p{Lu}]*\p{Ll}[^\p{Lu}]*"),
    ("all_upper", r"[^\p{Ll}]*\p{Lu}[^\p{Ll}]*"),
    ("initial_upper", r"\p{Lu}.*"),
)  # anything else (punctuation, mixed case inside a word): "other"
WORD_DELIMITERS = r"\s+|[^\p{L}\p{M}\p{N}_@#\s]"  # RE2's \w is ASCII only
KEPT_DELIMITERS = r"[^\p{L}\p{M}\p{N}_@#\s]"


def fit_tables(sentences: list[tuple[list[str], list[str]]], pre: TaggingPreprocessingConfig,
               extra_words: list[str] = ()) -> tuple[list[str], list[str]]:
    """The word vocabulary (most frequent first, ids from 2) and the characters (ids from 2) of the training
    sentences; `extra_words` (pretrained vectors' words) join the vocabulary after the training words."""
    counts = Counter(w.lower() if pre.lowercase else w for words, _ in sentences for w in words)
    words = [w for w, c in counts.most_common() if c >= pre.min_count][:pre.vocabulary_size - 2]
    seen = set(words)
    words += [w for w in extra_words if w not in seen][:max(0, pre.vocabulary_size - 2 - len(words))]
    chars = sorted({c for words_, _ in sentences for w in words_ for c in w[:pre.max_word_length]})
    return words, chars


class TaggerInputs(tf.Module):
    """(batch, words) strings, "" as padding -> {"words", "chars", "casing"} ids."""

    def __init__(self, words: list[str], chars: list[str], pre: TaggingPreprocessingConfig):
        super().__init__(name="tagger_inputs")
        self.lowercase, self.max_word_length = pre.lowercase, pre.max_word_length
        self.word_table = tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(
            tf.constant(words or ["\x00"], tf.string), tf.range(2, 2 + max(1, len(words)), dtype=tf.int32)), UNKNOWN)
        self.char_table = tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(
            tf.constant(chars or ["\x00"], tf.string), tf.range(2, 2 + max(1, len(chars)), dtype=tf.int32)), UNKNOWN)

    @property
    def vocabulary_size(self) -> int:
        return 2 + int(self.word_table.size())

    @property
    def char_vocabulary_size(self) -> int:
        return 2 + int(self.char_table.size())

    def __call__(self, tokens: tf.Tensor) -> dict:
        tokens = tf.convert_to_tensor(tokens, tf.string)
        present = tf.not_equal(tokens, "")
        keys = tf.strings.lower(tokens, encoding="utf-8") if self.lowercase else tokens
        word_ids = tf.where(present, self.word_table.lookup(keys), PAD)
        chars = tf.strings.unicode_split(tokens, "UTF-8")[:, :, :self.max_word_length]  # ragged (batch, words, chars)
        char_ids = tf.ragged.map_flat_values(self.char_table.lookup, chars)
        width = tf.maximum(tf.reduce_max(tf.concat([chars.row_lengths(axis=2).flat_values, [1]], 0)), 1)
        shape = tf.stack([tf.shape(tokens, out_type=tf.int64)[0], tf.shape(tokens, out_type=tf.int64)[1], width])
        char_ids = char_ids.to_tensor(PAD, shape=shape)
        return {"words": word_ids, "chars": char_ids, "casing": casing_ids(tokens)}


def casing_ids(tokens: tf.Tensor) -> tf.Tensor:
    """The casing class of each word (0 for "" padding, `len(CASING_PATTERNS) + 1` for "other")."""
    casing = tf.fill(tf.shape(tokens), len(CASING_PATTERNS) + 1)
    for index, (_, pattern) in reversed(list(enumerate(CASING_PATTERNS, 1))):  # the first match wins
        casing = tf.where(tf.strings.regex_full_match(tokens, pattern), index, casing)
    return tf.where(tf.equal(tokens, ""), 0, casing)


def split_words(texts: tf.Tensor) -> tuple[tf.RaggedTensor, tf.RaggedTensor, tf.RaggedTensor]:
    """Raw texts (batch,) -> words, and each word's start and end as character (not byte) offsets, ragged."""
    import tensorflow_text as tf_text

    words, starts, ends = tf_text.regex_split_with_offsets(texts, WORD_DELIMITERS, KEPT_DELIMITERS)
    def to_chars(offsets: tf.RaggedTensor) -> tf.Tensor:  # the bytes before each offset, counted as characters
        dense = offsets.to_tensor()
        return tf.strings.length(tf.strings.substr(tf.broadcast_to(texts[:, None], tf.shape(dense)),
                                                   tf.zeros_like(dense), dense), unit="UTF8_CHAR")

    lengths = words.row_lengths()
    return (words, tf.RaggedTensor.from_tensor(to_chars(starts), lengths=lengths),
            tf.RaggedTensor.from_tensor(to_chars(ends), lengths=lengths))


def make_tagging_dataset(sentences: list[tuple[list[str], list[str]]], tag_ids: dict[str, int], inputs: TaggerInputs,
                         *, batch_size: int, shuffle: bool = False, seed: int = 0) -> tf.data.Dataset:
    """Batches of (inputs, tag ids padded with -1), sentences of similar lengths together (shuffled batches when
    training); in sentence order otherwise."""
    words = tf.ragged.constant([w for w, _ in sentences], dtype=tf.string) if sentences else \
        tf.ragged.constant([[]], dtype=tf.string)[:0]
    tags = tf.ragged.constant([[tag_ids[t] for t in tags] for _, tags in sentences], dtype=tf.int32) if sentences \
        else tf.ragged.constant([[]], dtype=tf.int32)[:0]
    dataset = tf.data.Dataset.from_tensor_slices((words, tags))
    if shuffle:
        dataset = dataset.shuffle(len(sentences), seed=seed, reshuffle_each_iteration=True)
    dataset = dataset.ragged_batch(batch_size)
    return prefetched(dataset.map(lambda w, t: (inputs(w.to_tensor("")), t.to_tensor(-1)),
                                  num_parallel_calls=tf.data.AUTOTUNE))


def pad_words(sentences: list[list[str]]) -> np.ndarray:
    """Sentences of words -> a (batch, longest) object array, "" as padding."""
    longest = max((len(s) for s in sentences), default=0)
    return np.array([list(s) + [""] * (longest - len(s)) for s in sentences], dtype=object).reshape(
        len(sentences), longest)
