import numpy as np
import pytest
import tensorflow as tf
from sklearn.feature_extraction.text import TfidfVectorizer

from kpipe.preprocessing.configs import TextPreprocessingConfig
from kpipe.preprocessing.ngrams import (
    fit_ngram_features,
    label_document_frequencies,
    nb_label_ratios,
    nb_log_count_ratios,
)

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


def test_naive_bayes_ratios_for_several_labels_are_one_vs_rest_per_label_as_in_numpy():
    """NBSVM for label sets: each label's texts against the texts without it (a text may count for several)."""
    label_sets = np.array([[1, 0, 1], [0, 1, 0], [1, 0, 0], [0, 1, 1], [1, 0, 1], [0, 1, 0]])
    features, _ = fit_ngram_features(TEXTS, np.zeros(len(TEXTS), np.int32), PRE, num_classes=1, ngrams=2,
                                     max_features=1000, weighting="nb")
    ratios = nb_label_ratios(*label_document_frequencies(features, TEXTS, label_sets, batch_size=4), alpha=0.5)
    binary = dense(features(tf.constant(list(TEXTS))))
    assert ratios.shape == (features.size, 3)
    for j in range(3):
        has = label_sets[:, j] == 1
        p = 0.5 + binary[has].sum(axis=0)
        q = 0.5 + binary[~has].sum(axis=0)
        expected = np.log((p / p[1:].sum()) / (q / q[1:].sum()))
        np.testing.assert_allclose(ratios[1:, j], expected[1:], rtol=1e-5)
    assert (ratios[0] == 0).all()  # the out-of-vocabulary bucket: held by no text


def test_naive_bayes_ratios_for_one_label_per_text_equal_the_single_label_ratios():
    labels = np.array([0, 1, 2, 0, 1, 2])
    features, class_df = fit_ngram_features(TEXTS, labels, PRE, num_classes=3, ngrams=2, max_features=1000,
                                            weighting="nb")
    one_hot = np.eye(3)[labels]
    np.testing.assert_allclose(nb_label_ratios(*label_document_frequencies(features, TEXTS, one_hot)),
                               nb_log_count_ratios(class_df), rtol=1e-5, atol=1e-6)


def test_word_and_character_tfidf_blocks_equal_scikit_learns_two_vectorizers_side_by_side():
    """char_ngrams: a second block of lower-cased character 1-3 grams, punctuation kept, each block L2-normalized
    on its own, exactly as `hstack` of a word and a character TfidfVectorizer (single spaces: scikit-learn's
    character analyzer collapses runs of white space, Keras does not)."""
    texts = np.array(["Great movie :)", "Awful movie!!", "great plot :("], dtype=object)
    features, _ = fit_ngram_features(texts, np.array([1, 0, 1]), PRE, num_classes=2, ngrams=2, max_features=1000,
                                     weighting="tfidf", char_ngrams=3, max_char_features=1000)
    names = features.vocabulary()
    words, chars = names[1:features.word_size], names[features.word_size + 1:]
    assert all(name.startswith("char:") for name in chars) and "char::)" in chars and "char:!!" in chars
    ours = dense(features(tf.constant(list(texts))))
    word_reference = TfidfVectorizer(analyzer=analyzer, sublinear_tf=True, vocabulary=words)
    char_reference = TfidfVectorizer(analyzer="char", ngram_range=(1, 3), lowercase=True, sublinear_tf=True,
                                     vocabulary=[name[len("char:"):] for name in chars])
    np.testing.assert_allclose(ours[:, 1:features.word_size], word_reference.fit_transform(texts).toarray(),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ours[:, features.word_size + 1:], char_reference.fit_transform(texts).toarray(),
                               rtol=1e-5, atol=1e-6)
    assert ours[:, [0, features.word_size]].sum() == 0  # both out-of-vocabulary buckets stay empty


def test_naive_bayes_ratios_with_character_ngrams_leave_both_unknown_buckets_at_zero():
    features, class_df = fit_ngram_features(TEXTS, LABELS, PRE, num_classes=2, ngrams=1, max_features=1000,
                                            weighting="nb", char_ngrams=2, max_char_features=1000)
    ratios = nb_log_count_ratios(class_df)
    binary = dense(features(tf.constant(list(TEXTS))))
    known = np.ones(features.size, bool)
    known[[0, features.word_size]] = False
    p, q = 1 + binary[LABELS == 1][:, known].sum(axis=0), 1 + binary[LABELS == 0][:, known].sum(axis=0)
    np.testing.assert_allclose(ratios[known, 0], np.log((p / p.sum()) / (q / q.sum())), rtol=1e-5)
    assert ratios[0, 0] == ratios[features.word_size, 0] == 0


def test_pair_features_are_two_blocks_and_the_set_overlap_of_their_ngrams():
    from kpipe.preprocessing.ngrams import PairNgramFeatures

    texts = np.array(["the cat sat", "a dog ran", "the dog sat on the mat", "cats and dogs"])
    features, _ = fit_ngram_features(texts, np.zeros(4, int), TextPreprocessingConfig(), num_classes=1, ngrams=1,
                                     max_features=100, weighting="tfidf")
    pairs = [["the cat sat", "the dog sat on"], ["a dog ran", ""], ["zzz", "qqq"], ["dog dog", "a dog"]]
    out = tf.sparse.to_dense(PairNgramFeatures(features)(tf.constant(pairs))).numpy()
    size = features.size
    assert out.shape == (4, 2 * size + 3)
    np.testing.assert_allclose(out[:, :size], tf.sparse.to_dense(features(tf.constant([a for a, _ in pairs]))))
    np.testing.assert_allclose(out[:, size:2 * size], tf.sparse.to_dense(features(tf.constant([b for _, b in pairs]))))
    known = set(features.vocabulary()[1:])
    for row, (a, b) in zip(out, pairs):  # the reference: Python sets of the known words
        first, second = set(a.split()) & known, set(b.split()) & known
        shared = len(first & second)
        expected = [shared / len(first) if first else 0, shared / len(second) if second else 0,
                    shared / len(first | second) if first | second else 0]
        np.testing.assert_allclose(row[-3:], expected, rtol=1e-6)


def test_hashed_features_count_each_ngram_in_its_hash_bucket_and_weigh_them_as_scikit_learn():
    from sklearn.feature_extraction.text import TfidfTransformer

    from kpipe.preprocessing.ngrams import fit_hashed_ngram_features

    features, class_df = fit_hashed_ngram_features(TEXTS, LABELS, PRE, num_classes=2, ngrams=2, buckets=50,
                                                   weighting="tfidf")
    expected = np.zeros((len(TEXTS), 50))
    for row, text in enumerate(TEXTS):
        for gram in analyzer(text):
            expected[row, 1 + tf.strings.to_hash_bucket_fast(gram, 49).numpy()] += 1
    np.testing.assert_array_equal(dense(features.counts(tf.constant(list(TEXTS)))), expected)
    np.testing.assert_array_equal(class_df.sum(axis=0), (expected > 0).sum(axis=0))
    reference = TfidfTransformer(sublinear_tf=True).fit(expected[:, 1:]).transform(expected[:, 1:]).toarray()
    np.testing.assert_allclose(dense(features(tf.constant(list(TEXTS))))[:, 1:], reference, rtol=1e-5, atol=1e-6)
    assert len(features.vocabulary()) == features.size == 50


def test_hashed_features_survive_a_saved_model_round_trip(tmp_path):
    from kpipe.preprocessing.ngrams import fit_hashed_ngram_features

    features, _ = fit_hashed_ngram_features(TEXTS, LABELS, PRE, num_classes=2, ngrams=2, buckets=64,
                                            weighting="tfidf", char_ngrams=2, char_buckets=32)
    module = tf.Module()
    module.features = features
    module.serve = tf.function(lambda texts: tf.sparse.to_dense(features(texts)),
                               input_signature=[tf.TensorSpec([None], tf.string)])
    tf.saved_model.save(module, str(tmp_path / "hashed"))
    loaded = tf.saved_model.load(str(tmp_path / "hashed"))
    texts = tf.constant(["an unseen text, great!", *TEXTS])
    np.testing.assert_allclose(loaded.serve(texts).numpy(), tf.sparse.to_dense(features(texts)).numpy(), rtol=1e-6)
