"""The NumPy preprocessing of portable exports equals the TensorFlow preprocessing the SavedModel runs, on the
embedded tweets' test split (3,724 real tweets: emoji, accents, URLs, hashtags) and on hand-made edge cases."""

import numpy as np
import pytest
import tensorflow as tf

from kpipe.datasets.text_classification import TextClassificationDataConfig, load_text_classification
from kpipe.portable.text import NgramCounts, WordIds
from kpipe.preprocessing.configs import TextPreprocessingConfig
from kpipe.preprocessing.ngrams import fit_ngram_features
from kpipe.preprocessing.text import encode_texts, fit_vocabulary, make_vectorizer

EDGE_CASES = ["", "   ", "ÉTÉ Café İstanbul ÀÖ", "can't won't I'm it\u2019s", "a\u00a0b\tc\nd\x0be", "!!!:)", "x" * 50,
              "emoji 😀 and ünïcödé", "🙂🙂", "one two three four five six seven eight nine ten eleven twelve"]


@pytest.fixture(scope="module")
def tweets():
    splits = load_text_classification(TextClassificationDataConfig(source="embedded", name="tweets-sentiment"))
    return [str(t) for t in splits.train.texts[:8000]], [str(t) for t in splits.test.texts] + EDGE_CASES


@pytest.mark.parametrize("standardize", ["lower_and_strip_punctuation", "lower_and_split_punctuation",
                                         "lower_and_split_punctuation_and_contractions", "lower", "none"])
@pytest.mark.parametrize("truncating", ["pre", "post", "head_tail"])
def test_word_ids_equal_the_tensorflow_vectorizer(tweets, standardize, truncating):
    train, test = tweets
    config = TextPreprocessingConfig(vocabulary_size=3000, sequence_length=12, standardize=standardize,
                                     truncating=truncating)
    vocabulary = fit_vocabulary(np.array(train, dtype=object), config)
    expected = encode_texts(make_vectorizer(config, vocabulary), tf.constant(test), config).numpy()
    ours = WordIds(vocabulary, standardize=standardize, split="whitespace", sequence_length=12,
                   truncating=truncating)(test)
    np.testing.assert_array_equal(ours, expected)


@pytest.mark.slow
@pytest.mark.parametrize("weighting, char_ngrams", [("tfidf", 0), ("tfidf", 3), ("binary", 4)])
def test_ngram_features_equal_the_tensorflow_features(tweets, weighting, char_ngrams):
    train, test = tweets
    train = train[:3000]  # tables of 4,000 word and 3,000 character n-grams still fill up (fitting 8,000 took 6 s)
    config = TextPreprocessingConfig(standardize="lower_and_split_punctuation")
    features, _ = fit_ngram_features(np.array(train, dtype=object), np.zeros(len(train), int), config, num_classes=2,
                                     ngrams=2, max_features=4000, weighting=weighting, char_ngrams=char_ngrams,
                                     max_char_features=3000)
    expected = tf.sparse.to_dense(features(tf.constant(test))).numpy()
    ours = NgramCounts(features.vocabulary(), features.idf.numpy(), standardize=config.standardize, split="whitespace",
                       ngrams=2, char_ngrams=char_ngrams, weighting=weighting)(test)
    assert ours.shape == expected.shape == (len(test), 4000 + (3000 if char_ngrams else 0))  # full tables
    np.testing.assert_allclose(ours, expected, rtol=1e-5, atol=1e-6)
    assert (ours != 0).sum() == (expected != 0).sum()  # the same n-grams found
