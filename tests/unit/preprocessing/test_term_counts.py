"""Vocabularies counted over a stream in bounded memory, against Keras' own `adapt` and exact Python counts."""

from collections import Counter

import keras
import numpy as np
import pytest
import tensorflow as tf

from kpipe.datasets.embedded import read_tweets_sentiment
from kpipe.preprocessing.configs import TextPreprocessingConfig
from kpipe.preprocessing.ngrams import fit_ngram_features
from kpipe.preprocessing.term_counts import TermCounts, counted_vocabularies
from kpipe.preprocessing.text import counted_vocabulary, fit_vocabulary


@pytest.fixture(scope="module")
def tweets():
    frame = read_tweets_sentiment()[:3000]
    return frame["text"].to_numpy(dtype=object), np.unique(frame["label"], return_inverse=True)[1].astype(np.int32)


def batches(texts, size=257):
    return [tf.constant(list(texts[i:i + size])) for i in range(0, len(texts), size)]


def ngram_layer(**options):
    return keras.layers.TextVectorization(output_mode="count", sparse=True, **options)


@pytest.mark.parametrize("options", [
    {"max_tokens": 2000, "ngrams": 2},                                                # word 1-2 grams, truncated
    {"max_tokens": 500, "standardize": "lower", "split": "character", "ngrams": 3},  # character 1-3 grams
    {"ngrams": 2},                                                                    # every term kept
])
def test_the_counted_vocabulary_is_adapts_term_for_term(tweets, options):
    texts, _ = tweets
    reference = ngram_layer(**options)
    reference.adapt(tf.data.Dataset.from_tensor_slices(list(texts)).batch(500))
    layer = ngram_layer(**options)
    (learned,) = counted_vocabularies([layer], batches(texts))
    layer.set_vocabulary(learned)
    assert layer.get_vocabulary() == reference.get_vocabulary()


def test_merging_in_small_buffers_changes_nothing(tweets):
    texts, _ = tweets
    whole, pieces = TermCounts(ngram_layer(ngrams=2)), TermCounts(ngram_layer(ngrams=2), merge_every=100)
    for batch in batches(texts):
        whole.update(batch)
        pieces.update(batch)
    assert whole.most_frequent(None) == pieces.most_frequent(None)


def test_the_word_vocabulary_counted_over_rows_is_fit_vocabularys(tweets):
    texts, labels = tweets
    config = TextPreprocessingConfig(vocabulary_size=3000)
    rows = tf.data.Dataset.from_tensor_slices((list(texts), labels))
    assert counted_vocabulary(rows, config) == fit_vocabulary(texts, config)


def test_pruned_counts_stay_within_their_bounds_and_say_how_much_of_the_top_is_uncertain(tweets):
    texts, _ = tweets
    layer = ngram_layer(ngrams=2)
    exact = Counter(term.decode() for batch in batches(texts)
                    for term in layer._preprocess(batch).flat_values.numpy())
    counter = TermCounts(layer, capacity=1000, merge_every=3000)
    for batch in batches(texts):
        counter.update(batch)
    assert counter.pruned > 0 and counter.error > 0  # the table did overflow
    assert len(counter.keys) <= 2 * 1000
    for term, kept, short_by in zip(counter.terms, counter.counts, counter.short_by):
        assert kept <= exact[term.decode()] <= kept + short_by
    for size in (20, 100, 290):
        top, uncertain = counter.most_frequent(size)
        truth = {term for term, _ in exact.most_common(size)}
        assert size - len(set(top) & truth) <= uncertain < size / 2  # every miss is among those flagged
    assert counter.most_frequent(20)[1] == 0  # frequent terms dominate: the top 20 is proven


def test_ngram_features_fitted_on_a_stream_of_rows_equal_those_fitted_in_memory(tweets):
    texts, labels = tweets
    options = dict(num_classes=2, ngrams=2, max_features=3000, weighting="nb", char_ngrams=2, max_char_features=300)
    pre = TextPreprocessingConfig()
    in_memory, class_df = fit_ngram_features(texts, labels, pre, **options)
    rows = tf.data.Dataset.from_tensor_slices((list(texts), labels))
    streamed, streamed_df = fit_ngram_features(rows, None, pre, **options)
    assert streamed.vocabulary() == in_memory.vocabulary()
    np.testing.assert_array_equal(streamed_df, class_df)
    np.testing.assert_allclose(streamed.idf.numpy(), in_memory.idf.numpy(), rtol=1e-6)


def test_ngram_features_counted_once_are_read_back_from_the_cache_without_the_rows(tweets, tmp_path):
    texts, labels = tweets
    options = dict(num_classes=2, ngrams=2, max_features=3000, weighting="tfidf", char_ngrams=2, max_char_features=300)
    pre, cache = TextPreprocessingConfig(), tmp_path / "ngrams-key.npz"
    rows = tf.data.Dataset.from_tensor_slices((list(texts), labels))
    fitted, class_df = fit_ngram_features(rows, None, pre, cache=cache, **options)
    nothing = rows.take(0)  # the cache must answer: these rows are empty
    again, again_df = fit_ngram_features(nothing, None, pre, cache=cache, **options)
    assert again.vocabulary() == fitted.vocabulary()
    np.testing.assert_array_equal(again_df, class_df)
    batch = tf.constant(list(texts[:50]))
    np.testing.assert_allclose(tf.sparse.to_dense(again(batch)).numpy(), tf.sparse.to_dense(fitted(batch)).numpy())
