"""Tokens and ids for sequence-to-sequence pairs, in TensorFlow ops only.

The same functions cut the training pairs into ids and run inside the exported SavedModel, so
serving sees exactly the preprocessing training saw. Tokens are characters, whitespace-separated
words (`TokenTable`) or WordPiece sub-words (`SubwordTable`); ids follow `kpipe.families.seq2seq_attention.model`
(0 padding, 1 unknown, 2 start, 3 end, then the tokens).
Sources longer than `max_source_length` tokens are cut to their first `max_source_length` tokens;
outputs stop after `max_target_length` tokens.
"""

from __future__ import annotations

import collections
from pathlib import Path

import numpy as np
import tensorflow as tf

from kpipe.preprocessing.buckets import quantile_boundaries
from kpipe.tokens import SEQ2SEQ
from kpipe.preprocessing.configs import PairPreprocessingConfig
from kpipe.preprocessing.prefetch import prefetched
from kpipe.preprocessing.text import cached_vocabulary, vectorize

END, SPECIAL_TOKENS, START, UNKNOWN = SEQ2SEQ.end, SEQ2SEQ.count, SEQ2SEQ.start, SEQ2SEQ.unknown

SPECIAL_NAMES = ["<pad>", "<unk>", "<s>", "</s>"]


def split_tokens(strings: tf.Tensor, kind: str, lowercase: bool = False) -> tf.RaggedTensor:
    """A batch of strings (batch,) → ragged tokens (batch, None)."""
    strings = tf.convert_to_tensor(strings, tf.string)
    if lowercase:
        strings = tf.strings.lower(strings, encoding="utf-8")
    return tf.strings.unicode_split(strings, "UTF-8") if kind == "char" else tf.strings.split(strings)


def fit_tokens(strings: list[str], kind: str, lowercase: bool = False) -> list[str]:
    """The token vocabulary of the training strings, most frequent first (ties alphabetical)."""
    tokens = split_tokens(tf.constant(strings or [""]), kind, lowercase).flat_values.numpy()
    counts = collections.Counter(t.decode("utf-8") for t in tokens)
    return sorted(counts, key=lambda t: (-counts[t], t))


class TokenTable(tf.Module):
    """Token ↔ id lookups for one side (special ids first, then `tokens`)."""

    def __init__(self, tokens: list[str], joiner: str):
        super().__init__()
        self.tokens = list(tokens)
        self.joiner = joiner  # "" for characters, " " for words
        ids = tf.range(SPECIAL_TOKENS, SPECIAL_TOKENS + len(tokens), dtype=tf.int64)
        self.to_id = tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(
            tf.constant(self.tokens, tf.string), ids), default_value=UNKNOWN)
        self.names = tf.constant(SPECIAL_NAMES + self.tokens)

    @property
    def size(self) -> int:
        return SPECIAL_TOKENS + len(self.tokens)

    def ids(self, tokens: tf.RaggedTensor) -> tf.RaggedTensor:
        return tf.cast(tf.ragged.map_flat_values(self.to_id.lookup, tokens), tf.int32)

    def encode(self, strings: tf.Tensor, kind: str, lowercase: bool = False) -> tf.RaggedTensor:
        """Strings (batch,) -> ragged ids (batch, None), split into `kind` tokens."""
        return self.ids(split_tokens(strings, kind, lowercase))

    def pieces(self, text: str, kind: str, lowercase: bool = False) -> list[str]:
        """One string's tokens, as the model sees them (for attention plots)."""
        return [t.decode("utf-8") for t in split_tokens(tf.constant([text]), kind, lowercase)[0].numpy()]

    def join(self, ids: tf.Tensor) -> tf.Tensor:
        """Decoded ids (batch, steps) → strings, stopping at the first end token (or padding)."""
        return tf.strings.reduce_join(tf.gather(self.names, until_end(ids)), axis=1, separator=self.joiner)


def until_end(ids: tf.Tensor) -> tf.RaggedTensor:
    """Decoded ids (batch, steps) -> each row's ids before its first end token (or padding), as int32."""
    ids = tf.cast(ids, tf.int32)
    keep = tf.cumsum(tf.cast((ids == END) | (ids == 0), tf.int32), axis=1) == 0
    return tf.ragged.boolean_mask(ids, keep)


SUBWORD_RESERVED = ["[PAD]", "[UNK]", "[START]", "[END]"]  # WordPiece's names for kpipe's ids 0-3

# WordPiece splits every punctuation mark off as a token of its own and detokenizes with a space between
# tokens; these rules put the spaces back where text has them (sacreBLEU re-tokenizes, so they change what a
# reader sees, not the scores).
DETOKENIZE_RULES = (
    (r"\s+([.,!?;:%)\]}»…])", r"\1"),     # no space before closing punctuation
    (r"([¿¡(\[{«])\s+", r"\1"),           # nor after opening punctuation
    (r"\s*'\s*", "'"),                      # I ' m -> I'm
    (r"(\d)\s*([.,:])\s*(\d)", r"\1\2\3"),  # 3 . 5 -> 3.5
    (r"(\w)\s+-\s+(\w)", r"\1-\2"),        # well - known -> well-known
)


class SubwordTable(tf.Module):
    """WordPiece sub-words <-> ids for one side (or both, shared), from a vocabulary `fit_subwords` computed
    on the training split: ids are kpipe's (0 padding, 1 unknown, 2 start, 3 end, then the pieces). Case,
    accents and punctuation are kept. TensorFlow Text's fast WordPiece ops hold no resource, so the export
    tokenizes and detokenizes raw strings however TensorFlow's state changes (SentencePiece's op keeps its model
    in a kernel that `tf.random.set_seed` discards)."""

    def __init__(self, vocabulary: list[str], lowercase: bool = False):
        super().__init__()
        import keras_hub

        if vocabulary[:len(SUBWORD_RESERVED)] != SUBWORD_RESERVED:
            raise ValueError(f"a sub-word vocabulary starts with {SUBWORD_RESERVED}")
        self.lowercase = lowercase
        self.tokens = list(vocabulary[len(SUBWORD_RESERVED):])
        self.tokenizer = keras_hub.tokenizers.WordPieceTokenizer(
            vocabulary=list(vocabulary), lowercase=lowercase, strip_accents=False, oov_token="[UNK]",
            dtype="int32", name="subword_tokenizer")

    @property
    def size(self) -> int:
        return SPECIAL_TOKENS + len(self.tokens)

    def encode(self, strings: tf.Tensor, kind: str = "subword", lowercase: bool = False) -> tf.RaggedTensor:
        strings = tf.convert_to_tensor(strings, tf.string)
        if lowercase and not self.lowercase:
            strings = tf.strings.lower(strings, encoding="utf-8")
        return tf.cast(vectorize(self.tokenizer, strings), tf.int32)

    def pieces(self, text: str, kind: str = "subword", lowercase: bool = False) -> list[str]:
        ids = self.encode(tf.constant([text]), lowercase=lowercase)[0].numpy()
        return [self.tokenizer.id_to_token(int(i)) for i in ids]

    def join(self, ids: tf.Tensor) -> tf.Tensor:
        """Decoded ids (batch, steps) → detokenized strings, stopping at the first end token (or padding)."""
        return detokenize_spacing(tf.convert_to_tensor(self.tokenizer.detokenize(until_end(ids)), tf.string))


def detokenize_spacing(text: tf.Tensor) -> tf.Tensor:
    """Tokens joined by spaces -> text spaced as written (`DETOKENIZE_RULES`), in TensorFlow ops."""
    for pattern, replacement in DETOKENIZE_RULES:
        text = tf.strings.regex_replace(text, pattern, replacement)
    return text


def fit_subwords(strings: list[str], vocabulary_size: int, lowercase: bool = False,
                 cache_dir: Path | None = None) -> list[str]:
    """A WordPiece vocabulary of the training strings (keras-hub's `compute_word_piece_vocabulary`: case,
    accents and punctuation kept), `SUBWORD_RESERVED` first; a small text gets the vocabulary it can fill.
    With `cache_dir`, kept there under a hash of the strings and settings: the fit takes minutes on a large
    corpus, and a resumed run or another model on the same pairs reuses it."""
    return cached_vocabulary(cache_dir, "subwords", (vocabulary_size, lowercase, SUBWORD_RESERVED), strings,
                             lambda: _fit_subwords(strings, vocabulary_size, lowercase))


def _fit_subwords(strings: list[str], vocabulary_size: int, lowercase: bool) -> list[str]:
    import keras_hub

    # A tf.data dataset: given a Python list, keras-hub would read the strings as file names.
    dataset = tf.data.Dataset.from_tensor_slices(tf.constant(strings or [""], tf.string)).batch(1024)
    return keras_hub.tokenizers.compute_word_piece_vocabulary(
        dataset, vocabulary_size, lowercase=lowercase, strip_accents=False, reserved_tokens=SUBWORD_RESERVED)


def source_ids(strings: tf.Tensor, table: TokenTable | SubwordTable,
               config: PairPreprocessingConfig) -> tf.RaggedTensor:
    """Source strings → ragged ids, cut to `max_source_length`."""
    return table.encode(strings, config.source_tokens, config.lowercase)[:, :config.max_source_length]


def target_ids(strings: tf.Tensor, table: TokenTable | SubwordTable,
               config: PairPreprocessingConfig) -> tf.RaggedTensor:
    """Target strings → ragged ids [t1, ..., tn, END], cut to `max_target_length` tokens first."""
    ids = table.encode(strings, config.target_tokens)[:, :config.max_target_length]
    end = tf.fill([ids.nrows(), 1], END)
    return tf.concat([ids, tf.RaggedTensor.from_tensor(end)], axis=1)


def pad_batch(ragged: tf.RaggedTensor) -> tf.Tensor:
    """Right-pad with 0 (as cuDNN needs with masks) to the longest row, at least one column wide."""
    dense = ragged.to_tensor(0)
    return tf.pad(dense, [[0, 0], [0, tf.maximum(0, 1 - tf.shape(dense)[1])]])


def make_pair_dataset(pairs: list[tuple[str, str]], source_table: TokenTable, target_table: TokenTable,
                      config: PairPreprocessingConfig, *, batch_size: int, shuffle: bool = False,
                      seed: int = 0) -> tf.data.Dataset:
    """Batches of ({"source", "target_in"}, target_out), right-padded per batch.

    With `config.length_buckets` > 1 a batch holds pairs of similar length (the longer of source
    and target, bucket boundaries at its quantiles in `pairs`), so it is padded to little more
    than its own length."""
    sources = source_ids(tf.constant([s for s, _ in pairs]), source_table, config)
    targets = target_ids(tf.constant([t for _, t in pairs]), target_table, config)
    target_in = tf.concat([tf.RaggedTensor.from_tensor(tf.fill([targets.nrows(), 1], START)), targets[:, :-1]],
                          axis=1)
    longer = np.maximum(sources.row_lengths().numpy(), targets.row_lengths().numpy())
    boundaries = quantile_boundaries(longer, config.length_buckets,
                                     max(config.max_source_length, config.max_target_length + 1))
    dataset = tf.data.Dataset.from_tensor_slices((sources, target_in, targets))
    if shuffle:
        dataset = dataset.shuffle(len(pairs), seed=seed, reshuffle_each_iteration=True)
    dataset = dataset.map(lambda s, i, o: ({"source": s, "target_in": i}, o))
    if boundaries:
        dataset = dataset.bucket_by_sequence_length(
            element_length_func=lambda x, o: tf.maximum(tf.shape(x["source"])[0], tf.shape(o)[0]),
            bucket_boundaries=boundaries, bucket_batch_sizes=[batch_size] * (len(boundaries) + 1))
    else:
        dataset = dataset.padded_batch(batch_size)
    return prefetched(dataset)


def lengths(strings: list[str], table: TokenTable | SubwordTable, kind: str, lowercase: bool = False) -> np.ndarray:
    """Token counts of strings (for reports: how many sources were truncated)."""
    return table.encode(tf.constant(strings or [""]), kind, lowercase).row_lengths().numpy()


def fit_tables(sources: list[str], targets: list[str], config: PairPreprocessingConfig,
               cache_dir: Path | None = None) -> tuple[TokenTable | SubwordTable, TokenTable | SubwordTable]:
    """The source and target tables of the training pairs, as `config` says (one shared sub-word vocabulary,
    or one table per side); sub-word vocabularies cached in `cache_dir` when given."""
    if config.shared_vocabulary:
        table = SubwordTable(fit_subwords(sources + targets, config.subword_vocabulary_size, cache_dir=cache_dir))
        return table, table

    def fit(strings: list[str], kind: str, lowercase: bool) -> TokenTable | SubwordTable:
        if kind == "subword":
            return SubwordTable(fit_subwords(strings, config.subword_vocabulary_size, lowercase, cache_dir),
                                lowercase)
        return TokenTable(fit_tokens(strings, kind, lowercase), joiner="" if kind == "char" else " ")

    return fit(sources, config.source_tokens, config.lowercase), fit(targets, config.target_tokens, False)
