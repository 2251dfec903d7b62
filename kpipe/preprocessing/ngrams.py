"""Bag-of-n-grams features in TensorFlow ops: raw strings -> sparse TF-IDF or binary vectors.

The features a TF-IDF + logistic regression script uses, computed inside the graph so the exported
SavedModel takes raw strings: Keras' `TextVectorization` counts the word n-grams of the training
vocabulary (sparse counts), optionally followed by a second block of character n-grams (lower-cased,
punctuation kept: ":)", "!!" and "#" carry sentiment in short texts), then

    "tfidf"   (1 + log count) * idf, each row scaled to unit L2 norm (scikit-learn's TfidfVectorizer
              with sublinear_tf=True and its smooth idf: ln((1 + n) / (1 + df)) + 1)
    "binary"  1 for every n-gram present (also the input of naive-Bayes weighting, see
              `nb_log_count_ratios`)

With character n-grams each block is normalized on its own, as scikit-learn's word and character
TfidfVectorizers stacked side by side are.

Whole documents are used, however long: no truncation, so the end of a long review counts too.
"""

from __future__ import annotations

import logging
from pathlib import Path

import keras
import numpy as np
import scipy.sparse
import tensorflow as tf

from kpipe.atomic import write_atomically
from kpipe.preprocessing.configs import TextPreprocessingConfig
from kpipe.preprocessing.standardize import keras_standardize
from kpipe.preprocessing.prefetch import prefetched
from kpipe.preprocessing.term_counts import counted_vocabularies
from kpipe.preprocessing.text import example_rows

log = logging.getLogger(__name__)

CHAR_PREFIX = "char:"  # marks the character n-grams in `NgramFeatures.vocabulary()`


class NgramFeatures(tf.Module):
    """Strings -> sparse (batch, features) float32 n-gram features; fitted with `fit_ngram_features`.

    The word n-grams come first, then (with `char_vectorizer`) the character n-grams. The first
    feature of each block is Keras' out-of-vocabulary bucket: always zero here, so it carries no signal.
    """

    def __init__(self, vectorizer: keras.layers.TextVectorization, idf: np.ndarray, weighting: str,
                 char_vectorizer: keras.layers.TextVectorization | None = None):
        super().__init__(name="ngram_features")
        self.vectorizer = vectorizer
        self.char_vectorizer = char_vectorizer
        self.word_size = vectorizer.vocabulary_size()  # the first character feature
        self.idf = tf.constant(idf, tf.float32)
        self.weighting = weighting

    @property
    def size(self) -> int:
        return int(self.idf.shape[0])

    def vocabulary(self) -> list[str]:
        """One name per feature: the word n-grams, then "char:" + each character n-gram (escaped, one line each)."""
        words = [str(w) for w in self.vectorizer.get_vocabulary()]
        if self.char_vectorizer is None:
            return words
        # Keras joins the characters of an n-gram with a space ("r e a", "t  " for "t "): every other one is the join.
        chars = [str(g) if i == 0 else str(g)[::2] for i, g in enumerate(self.char_vectorizer.get_vocabulary())]
        return words + [CHAR_PREFIX + g.encode("unicode_escape").decode("ascii") for g in chars]

    def counts(self, texts: tf.Tensor) -> tf.SparseTensor:
        blocks = self._blocks(texts)
        counts = blocks[0] if len(blocks) == 1 else tf.sparse.concat(1, blocks)
        return tf.SparseTensor(counts.indices, tf.cast(counts.values, tf.float32), counts.dense_shape)

    def _blocks(self, texts: tf.Tensor) -> list[tf.SparseTensor]:
        """The sparse counts of each block (words, then characters)."""
        texts = tf.reshape(texts, [-1, 1])  # 2-D input: the sparse path needs it
        blocks = [self._block_counts(self.vectorizer, texts)]
        if self.char_vectorizer is not None:
            blocks.append(self._block_counts(self.char_vectorizer, texts))
        return blocks

    @staticmethod
    def _block_counts(vectorizer, texts: tf.Tensor) -> tf.SparseTensor:
        counts = vectorizer(texts)
        return tf.sparse.retain(counts, tf.not_equal(counts.indices[:, 1], 0))

    def __call__(self, texts: tf.Tensor) -> tf.SparseTensor:
        counts = self.counts(texts)
        if self.weighting != "tfidf":
            return tf.SparseTensor(counts.indices, tf.ones_like(counts.values), counts.dense_shape)
        values = (1.0 + tf.math.log(counts.values)) * tf.gather(self.idf, counts.indices[:, 1])
        # One L2 norm per (row, block): segment 2 * row for the words, 2 * row + 1 for the characters.
        block = tf.cast(counts.indices[:, 1] >= self.word_size, tf.int64)
        segments = 2 * counts.indices[:, 0] + block
        norms = tf.math.sqrt(tf.math.unsorted_segment_sum(values * values, segments,
                                                          2 * tf.cast(counts.dense_shape[0], tf.int32)))
        return tf.SparseTensor(counts.indices, values / tf.gather(norms, segments), counts.dense_shape)


def label_document_frequencies(features: NgramFeatures, texts: np.ndarray, labels: np.ndarray,
                               batch_size: int = 1024) -> tuple[np.ndarray, np.ndarray]:
    """For texts with several labels each ((n, labels) 0/1 `labels`): how many texts of each label hold each
    n-gram, (labels, features), and how many texts hold it at all, (features,); for `nb_label_ratios`."""
    per_label = np.zeros((labels.shape[1], features.size), np.float64)
    totals = np.zeros(features.size, np.float64)
    for start in range(0, len(texts), batch_size):
        counts = features.counts(tf.constant(np.asarray(texts[start:start + batch_size], dtype=str)))
        rows, columns = counts.indices.numpy().T
        held = scipy.sparse.csr_matrix((np.ones(len(rows)), (rows, columns)),
                                       shape=(len(texts[start:start + batch_size]), features.size))
        per_label += np.asarray(held.T @ np.asarray(labels[start:start + batch_size], np.float64)).T
        totals += np.asarray(held.sum(axis=0)).reshape(-1)
    return per_label, totals


OVERLAP_FEATURES = ("first_in_second", "second_in_first", "jaccard")  # a pair's shared n-grams, as shares


class PairNgramFeatures(tf.Module):
    """Pairs of strings (batch, 2) -> sparse (batch, 2 * features + 3): the first text's n-gram features, the
    second's (the same fitted `NgramFeatures`, a block each), then how much they share: the share of the first
    text's distinct n-grams found in the second, the reverse, and their Jaccard overlap. A linear model on two
    bags cannot see that the texts agree; the overlap block lets it.
    """

    def __init__(self, features: NgramFeatures):
        super().__init__(name="pair_ngram_features")
        self.features = features

    @property
    def size(self) -> int:
        return 2 * self.features.size + len(OVERLAP_FEATURES)

    def vocabulary(self) -> list[str]:
        words = self.features.vocabulary()
        return ([f"first:{w}" for w in words] + [f"second:{w}" for w in words]
                + [f"overlap:{name}" for name in OVERLAP_FEATURES])

    def __call__(self, texts: tf.Tensor) -> tf.SparseTensor:
        first, second = self.features(texts[:, 0]), self.features(texts[:, 1])
        return tf.sparse.concat(1, [first, second, tf.sparse.from_dense(overlap_shares(first, second))])


def overlap_shares(first: tf.SparseTensor, second: tf.SparseTensor) -> tf.Tensor:
    """(batch, 3) float32: |A & B| / |A|, |A & B| / |B| and |A & B| / |A | B| of each row's feature sets
    (0 where a set is empty)."""
    def feature_sets(features: tf.SparseTensor) -> tf.SparseTensor:
        features = tf.sparse.reorder(features)
        return tf.RaggedTensor.from_value_rowids(features.indices[:, 1], features.indices[:, 0],
                                                 nrows=features.dense_shape[0]).to_sparse()

    a, b = feature_sets(first), feature_sets(second)
    shared = tf.cast(tf.sets.size(tf.sets.intersection(a, b)), tf.float32)
    size_a, size_b = tf.cast(tf.sets.size(a), tf.float32), tf.cast(tf.sets.size(b), tf.float32)
    return tf.stack([tf.math.divide_no_nan(shared, size_a), tf.math.divide_no_nan(shared, size_b),
                     tf.math.divide_no_nan(shared, size_a + size_b - shared)], axis=1)


def fit_ngram_features(texts, labels, config: TextPreprocessingConfig, *, num_classes: int,
                       ngrams: int, max_features: int, weighting: str, char_ngrams: int = 0,
                       max_char_features: int = 0, cache: Path | None = None) -> tuple[NgramFeatures, np.ndarray]:
    """The n-gram vocabulary (the `max_features` most frequent n-grams, words standardized and split
    as `config` says) and their idf, from the training texts only. With `char_ngrams` = N > 0, also
    the `max_char_features` most frequent character 1- to N-grams of the lower-cased texts.

    `texts` is an array (with `labels`), or a tf.data stream of (text, label) rows too large to hold: its
    vocabularies are then counted in bounded memory (`kpipe.preprocessing.term_counts`), in one pass, and the
    document frequencies in a second. With `cache` (an .npz file named after the data and these settings), what a
    fit found is kept there and the next fit reads it instead.

    Returns:
        (the features, the document frequency of each n-gram per class: (num_classes, features)),
        the latter counted in the same pass as the idf, for `nb_log_count_ratios`.
    """
    vectorizer = keras.layers.TextVectorization(
        max_tokens=max_features, standardize=keras_standardize(config.standardize), split=config.split,
        ngrams=ngrams, output_mode="count", sparse=True, name="ngram_vectorization")
    char_vectorizer = None
    if char_ngrams:
        char_vectorizer = keras.layers.TextVectorization(
            max_tokens=max_char_features, standardize="lower", split="character", ngrams=char_ngrams,
            output_mode="count", sparse=True, name="char_ngram_vectorization")
    vectorizers = [v for v in (vectorizer, char_vectorizer) if v is not None]
    if cache is not None and cache.is_file():
        return _cached_features(cache, vectorizers, weighting)
    rows, in_memory = example_rows(texts, labels)
    if in_memory:
        text_batches = tf.data.Dataset.from_tensor_slices(np.asarray(texts, dtype=str)).batch(1024)
        for layer in vectorizers:
            layer.adapt(text_batches)
    else:
        text_batches = prefetched(rows.map(lambda text, label: text).batch(4096))
        for layer, vocabulary in zip(vectorizers, counted_vocabularies(vectorizers, text_batches)):
            layer.set_vocabulary(vocabulary)
    size = vectorizer.vocabulary_size() + (char_vectorizer.vocabulary_size() if char_vectorizer else 0)
    features = NgramFeatures(vectorizer, np.ones(size, np.float32), weighting, char_vectorizer)
    class_df = fit_idf(features, rows, num_classes)
    log.info("N-gram features: %d (word 1- to %d-grams%s, %s)", size, ngrams,
             f"; {size - features.word_size} character 1- to {char_ngrams}-grams" if char_ngrams else "", weighting)
    if cache is not None:
        cache.parent.mkdir(parents=True, exist_ok=True)
        learned = [np.array(v.get_vocabulary(include_special_tokens=False), dtype=str) for v in vectorizers]

        def save(partial: Path) -> None:
            with open(partial, "wb") as handle:  # a handle: np.savez would add ".npz" to a name
                np.savez(handle, *learned, idf=features.idf.numpy(), class_df=class_df)
        write_atomically(cache, save)  # fsynced, the partial removed on failure (a full disk)
    return features, class_df


def _cached_features(cache: Path, vectorizers: list, weighting: str) -> tuple[NgramFeatures, np.ndarray]:
    with np.load(cache) as saved:
        for number, layer in enumerate(vectorizers):
            layer.set_vocabulary(saved[f"arr_{number}"].tolist())
        idf, class_df = saved["idf"], saved["class_df"]
    log.info("N-gram features from the cache %s: %d", cache, len(idf))
    return NgramFeatures(vectorizers[0], idf, weighting, vectorizers[1] if len(vectorizers) > 1 else None), class_df


def fit_idf(features: NgramFeatures, rows: tf.data.Dataset, num_classes: int) -> np.ndarray:
    """Set `features.idf` from the document frequencies of its n-grams over `rows` of (text, label id), in one
    pass a batch at a time; returns the document frequencies per class, (num_classes, features)."""
    class_df = np.zeros((num_classes, features.size), np.float64)
    documents = 0
    for batch_texts, batch_labels in prefetched(rows.batch(1024)):
        counts = features.counts(batch_texts)
        positions, columns = counts.indices[:, 0].numpy(), counts.indices[:, 1].numpy()
        np.add.at(class_df, (batch_labels.numpy()[positions], columns), 1.0)  # each n-gram once per text
        documents += int(batch_texts.shape[0])
    idf = np.log((1.0 + documents) / (1.0 + class_df.sum(axis=0))) + 1.0
    idf[0] = 0.0  # the out-of-vocabulary buckets
    if features.word_size < features.size:
        idf[features.word_size] = 0.0
    features.idf = tf.constant(idf, tf.float32)
    return class_df


class HashedNgramFeatures(NgramFeatures):
    """`NgramFeatures` without a vocabulary (`model.hashing`): each n-gram counts in one of `buckets` columns
    picked by its FarmHash fingerprint (`tf.strings.to_hash_bucket_fast`), so nothing is fitted but the idf.
    Column 0 of each block stays empty, as the out-of-vocabulary column of `NgramFeatures` does; colliding n-grams
    share a column. The n-grams are those `TextVectorization` makes (the same standardization and split)."""

    def __init__(self, config: TextPreprocessingConfig, *, ngrams: int, buckets: int, weighting: str,
                 char_ngrams: int = 0, char_buckets: int = 0):
        tf.Module.__init__(self, name="hashed_ngram_features")
        self.vectorizer = self.char_vectorizer = None
        self.word_terms = keras.layers.TextVectorization(
            standardize=keras_standardize(config.standardize), split=config.split, ngrams=ngrams,
            vocabulary=["[hashed]"], name="ngram_terms")  # used for its n-grams only
        self.char_terms = keras.layers.TextVectorization(
            standardize="lower", split="character", ngrams=char_ngrams, vocabulary=["[hashed]"],
            name="char_ngram_terms") if char_ngrams else None
        self.word_size, self.char_size = buckets, char_buckets if char_ngrams else 0
        self.idf = tf.ones([self.word_size + self.char_size], tf.float32)
        self.weighting = weighting

    def vocabulary(self) -> list[str]:
        return ([f"hash:{i}" for i in range(self.word_size)]
                + [f"{CHAR_PREFIX}hash:{i}" for i in range(self.char_size)])

    def _blocks(self, texts: tf.Tensor) -> list[tf.SparseTensor]:
        texts = tf.reshape(texts, [-1])
        blocks = [self._hashed_counts(self.word_terms, texts, self.word_size)]
        if self.char_terms is not None:
            blocks.append(self._hashed_counts(self.char_terms, texts, self.char_size))
        return blocks

    @staticmethod
    def _hashed_counts(layer, texts: tf.Tensor, buckets: int) -> tf.SparseTensor:
        terms = layer._preprocess(texts)  # noqa: SLF001 (TextVectorization's own n-grams, as term_counts counts them)
        columns = 1 + tf.strings.to_hash_bucket_fast(terms, buckets - 1)
        return tf.sparse.bincount(columns, axis=-1, minlength=buckets, maxlength=buckets)


def fit_hashed_ngram_features(texts, labels, config: TextPreprocessingConfig, *, num_classes: int, ngrams: int,
                              buckets: int, weighting: str, char_ngrams: int = 0,
                              char_buckets: int = 0) -> tuple[HashedNgramFeatures, np.ndarray]:
    """`fit_ngram_features` with hashed n-grams (`HashedNgramFeatures`): only the idf is fitted, in one pass."""
    features = HashedNgramFeatures(config, ngrams=ngrams, buckets=buckets, weighting=weighting,
                                   char_ngrams=char_ngrams, char_buckets=char_buckets)
    class_df = fit_idf(features, example_rows(texts, labels)[0], num_classes)
    log.info("N-gram features: %d hash buckets (word 1- to %d-grams%s, %s; no vocabulary)", features.size, ngrams,
             f"; {features.char_size} for character 1- to {char_ngrams}-grams" if char_ngrams else "", weighting)
    return features, class_df


def nb_label_ratios(per_label: np.ndarray, totals: np.ndarray, *, alpha: float = 1.0) -> np.ndarray:
    """Naive-Bayes log-count ratios for several labels per text, one column per label, each label against the texts
    without it (NBSVM's one-vs-rest): r_j = log((p / |p|_1) / (q / |q|_1)), p = alpha + the texts of label j holding
    each n-gram, q = alpha + the other texts holding it. N-grams no training text holds keep a ratio of 0.

    Args:
        per_label, totals: from `label_document_frequencies`.

    Returns:
        (features, labels), float32.
    """
    seen = totals > 0
    ratios = np.zeros((per_label.shape[1], per_label.shape[0]), np.float64)
    for j, label in enumerate(per_label):
        p = alpha + label[seen]
        q = alpha + totals[seen] - label[seen]
        ratios[seen, j] = np.log((p / p.sum()) / (q / q.sum()))
    return ratios.astype(np.float32)


def nb_log_count_ratios(class_df: np.ndarray, *, alpha: float = 1.0) -> np.ndarray:
    """Naive-Bayes log-count ratios of the binary features (Wang & Manning 2012, NBSVM), one column per
    class against the rest (one column for two classes: positive against negative).

    r = log((p / |p|_1) / (q / |q|_1)), p = alpha + sum of the binary feature vectors of the class,
    q = alpha + the same sum over the other examples.

    Args:
        class_df: (num_classes, features) sums of the binary feature vectors per class, from
            `fit_ngram_features`.

    Returns:
        (features, 1) for two classes, else (features, num_classes), float32.
    """
    num_classes, size = class_df.shape
    seen = class_df.sum(axis=0) > 0  # leaves out the out-of-vocabulary buckets (never set): their ratio stays 0
    sums = class_df[:, seen]
    classes = [1] if num_classes == 2 else range(num_classes)
    ratios = np.zeros((size, len(classes)), np.float64)
    for j, c in enumerate(classes):
        p = alpha + sums[c]
        q = alpha + sums.sum(axis=0) - sums[c]
        ratios[seen, j] = np.log((p / p.sum()) / (q / q.sum()))
    return ratios.astype(np.float32)


def make_ngram_dataset(texts: np.ndarray, labels: np.ndarray, features: NgramFeatures, *, batch_size: int,
                       shuffle: bool = False, seed: int = 0) -> tf.data.Dataset:
    """Batches of (sparse n-gram features, labels); `texts` may be a stream of rows (see `example_rows`)."""
    ds, in_memory = example_rows(texts, labels)
    if shuffle and in_memory:
        ds = ds.shuffle(len(texts), seed=seed, reshuffle_each_iteration=True)
    return prefetched(ds.batch(batch_size).map(lambda t, y: (features(t), y), num_parallel_calls=tf.data.AUTOTUNE))
