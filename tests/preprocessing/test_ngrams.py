import numpy as np
import pytest
import tensorflow as tf
from sklearn.feature_extraction.text import TfidfVectorizer

from kpipe.preprocessing.configs import TextPreprocessingConfig
from kpipe.preprocessing.ngrams import fit_ngram_features, nb_log_count_ratios

TEXTS = np.array(["A great movie, great cast!", "Awful movie; awful plot.", "great plot and a fine cast",
                  "boring, awful and long", "fine fun movie", "long boring plot"], dtype=object)
LABELS = np.array([1, 0, 1, 0, 1, 0])
PRE = TextPreprocessingConfig()


def dense(sparse):
    return tf.sparse.to_dense(tf.sparse.reorder(sparse)).numpy()


def analyzer(text):
    """Keras' standardization (lower case, punctuation stripped), whitespace split, then 1-2 grams."""
    words = "".join(c for c in text.lower() if c.isalnum() or c.isspace()).split()
    return words + [" ".join(pair) for pair in zip(words, words[1:])]


def test_tfidf_features_equal_scikit_learns_sublinear_smooth_idf_l2():
    features, _ = fit_ngram_features(TEXTS, LABELS, PRE, num_classes=2, ngrams=2, max_features=1000,
                                     weighting="tfidf")
    vocabulary = features.vectorizer.get_vocabulary()
    ours = dense(features(tf.constant(list(TEXTS))))
    reference = TfidfVectorizer(analyzer=analyzer, sublinear_tf=True, vocabulary=vocabulary[1:]).fit(TEXTS)
    expected = reference.transform(TEXTS).toarray()
    assert ours[:, 0].sum() == 0  # the out-of-vocabulary bucket stays empty
    np.testing.assert_allclose(ours[:, 1:], expected, rtol=1e-5, atol=1e-6)


def test_binary_features_mark_each_ngram_once():
    features, _ = fit_ngram_features(TEXTS, LABELS, PRE, num_classes=2, ngrams=2, max_features=1000,
                                     weighting="binary")
    vocabulary = features.vectorizer.get_vocabulary()
    row = dense(features(tf.constant(["great plot great plot"])))[0]
    assert row.sum() == 3  # great, plot, "great plot" (twice each); "plot great" is not in the vocabulary
    assert row[vocabulary.index("great")] == 1 and row[vocabulary.index("great plot")] == 1


@pytest.mark.parametrize("num_classes", [2, 3])
def test_naive_bayes_ratios_match_the_formula_in_numpy(num_classes):
    labels = LABELS if num_classes == 2 else np.array([0, 1, 2, 0, 1, 2])
    features, class_df = fit_ngram_features(TEXTS, labels, PRE, num_classes=num_classes, ngrams=2,
                                            max_features=1000, weighting="nb")
    ratios = nb_log_count_ratios(class_df, alpha=0.5)
    binary = dense(features(tf.constant(list(TEXTS))))
    columns = [1] if num_classes == 2 else range(num_classes)
    assert ratios.shape == (features.size, len(columns))
    for j, c in enumerate(columns):
        p = 0.5 + binary[labels == c].sum(axis=0)
        q = 0.5 + binary[labels != c].sum(axis=0)
        expected = np.log((p / p[1:].sum()) / (q / q[1:].sum()))  # feature 0 (out of vocabulary) is never set
        np.testing.assert_allclose(ratios[1:, j], expected[1:], rtol=1e-5)
    great = features.vectorizer.get_vocabulary().index("great")
    if num_classes == 2:
        assert ratios[great, 0] > 0 > ratios[features.vectorizer.get_vocabulary().index("awful"), 0]
