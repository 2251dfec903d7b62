import keras
import numpy as np
import pytest
import tensorflow as tf

from kpipe.preprocessing.configs import TextPreprocessingConfig
from kpipe.preprocessing.text import bucket_boundaries, encode_texts, fit_vocabulary, make_text_dataset, make_vectorizer, token_lengths

TEXTS = np.array(["a b c d e f", "a b", "", "c c c", "b a d", "f!"], dtype=object)


def ids_of(vectorizer, texts):
    return [vectorizer(tf.constant([t])).to_list()[0] for t in texts]


@pytest.mark.parametrize("truncating", ["pre", "post"])
def test_encoding_matches_keras_pad_sequences_with_post_padding(truncating):
    config = TextPreprocessingConfig(vocabulary_size=50, sequence_length=4, truncating=truncating)
    vectorizer = make_vectorizer(config, fit_vocabulary(TEXTS, config))
    ours = encode_texts(vectorizer, tf.constant(list(TEXTS)), config).numpy()
    reference = keras.utils.pad_sequences(ids_of(vectorizer, TEXTS), maxlen=4, padding="post", truncating=truncating)
    np.testing.assert_array_equal(ours, reference)


def test_head_tail_keeps_the_first_quarter_and_the_last_three_quarters_of_a_long_text():
    config = TextPreprocessingConfig(vocabulary_size=50, sequence_length=4, truncating="head_tail")
    vectorizer = make_vectorizer(config, fit_vocabulary(TEXTS, config))
    ours = encode_texts(vectorizer, tf.constant(list(TEXTS)), config).numpy()
    kept = [ids if len(ids) <= 4 else ids[:1] + ids[-3:] for ids in ids_of(vectorizer, TEXTS)]  # 1 + 3 of 4
    reference = keras.utils.pad_sequences(kept, maxlen=4, padding="post")
    np.testing.assert_array_equal(ours, reference)
    for end in ("pre", "post"):  # not what cutting either end gives
        assert ours[0].tolist() != keras.utils.pad_sequences(ids_of(vectorizer, TEXTS[:1]), maxlen=4,
                                                             truncating=end)[0].tolist()


def test_vocabulary_is_fitted_on_given_texts_only_and_ordered_by_frequency():
    config = TextPreprocessingConfig(vocabulary_size=5)
    vocabulary = fit_vocabulary(np.array(["x x x y y z"], dtype=object), config)
    assert vocabulary == ["", "[UNK]", "x", "y", "z"]
    vectorizer = make_vectorizer(config, vocabulary)
    assert ids_of(vectorizer, ["x never-seen z"]) == [[2, 1, 4]]


def test_vocabulary_cache_returns_the_fitted_vocabulary_and_refits_when_texts_or_settings_change(tmp_path,
                                                                                                   monkeypatch):
    import kpipe.preprocessing.text as text

    config = TextPreprocessingConfig(vocabulary_size=5)
    texts = np.array(["x x x y y z"], dtype=object)
    first = fit_vocabulary(texts, config, cache_dir=tmp_path)
    assert [p.name.startswith("vocabulary-") for p in tmp_path.iterdir()] == [True]  # no partial file left

    def no_fit(*args):
        raise AssertionError("fitted again")

    monkeypatch.setattr(text, "_fit_vocabulary", no_fit)
    assert fit_vocabulary(texts, config, cache_dir=tmp_path) == first == ["", "[UNK]", "x", "y", "z"]
    for other_texts, other_config in ((np.array(["x x y"], dtype=object), config),
                                      (texts, TextPreprocessingConfig(vocabulary_size=4))):
        with pytest.raises(AssertionError, match="fitted again"):
            fit_vocabulary(other_texts, other_config, cache_dir=tmp_path)
    # Settings that do not change the vocabulary share its cache.
    assert fit_vocabulary(texts, TextPreprocessingConfig(vocabulary_size=5, sequence_length=3),
                          cache_dir=tmp_path) == first


def test_empty_batch_of_empty_texts_still_has_one_column():
    config = TextPreprocessingConfig()
    vectorizer = make_vectorizer(config, ["", "[UNK]", "a"])
    out = encode_texts(vectorizer, tf.constant(["", "   "]), config)
    assert out.shape == (2, 1) and out.dtype == tf.int32 and not out.numpy().any()


def test_bucket_boundaries_follow_training_length_quantiles():
    config = TextPreprocessingConfig(sequence_length=100, length_buckets=4)
    # Quartiles of 1..100 are 25.75, 50.5 and 75.25; a text of length L goes to the first bucket > L.
    assert bucket_boundaries(np.arange(1, 101), config) == [26, 51, 76]
    # Lengths are capped at sequence_length first: half of 1..200 becomes 100, leaving one boundary.
    assert bucket_boundaries(np.arange(1, 201), config) == [51]
    assert bucket_boundaries(np.arange(1, 101), TextPreprocessingConfig(length_buckets=0)) == []


@pytest.mark.parametrize("buckets", [0, 3])
def test_dataset_yields_every_example_once_right_padded(buckets):
    config = TextPreprocessingConfig(vocabulary_size=50, sequence_length=4, length_buckets=buckets)
    vectorizer = make_vectorizer(config, fit_vocabulary(TEXTS, config))
    boundaries = bucket_boundaries(token_lengths(TEXTS, vectorizer), config)
    labels = np.arange(len(TEXTS))
    ds = make_text_dataset(TEXTS, labels, vectorizer, config, batch_size=2, shuffle=True, seed=3,
                           boundaries=boundaries)
    expected = {i: row for i, row in enumerate(encode_texts(vectorizer, tf.constant(list(TEXTS)), config).numpy())}
    seen = []
    for ids, y in ds:
        assert ids.dtype == tf.int32 and ids.shape[1] <= 4
        for row, label in zip(ids.numpy(), y.numpy()):
            n = len(row)
            np.testing.assert_array_equal(row, expected[label][:n])  # same ids, padding only at the end
            assert not expected[label][n:].any()
            seen.append(label)
    assert sorted(seen) == labels.tolist()


def test_shuffle_is_repeatable_with_a_seed():
    config = TextPreprocessingConfig(vocabulary_size=50, length_buckets=0)
    texts = np.array([f"w{i}" for i in range(50)], dtype=object)
    vectorizer = make_vectorizer(config, fit_vocabulary(texts, config))

    def order(seed):
        ds = make_text_dataset(texts, np.arange(50), vectorizer, config, batch_size=50, shuffle=True, seed=seed)
        return next(iter(ds))[1].numpy().tolist()

    assert order(1) == order(1)
    assert order(1) != order(2)


@pytest.mark.parametrize("field, value, message", [
    ("sequence_length", 0, r"`sequence_length` must be ≥ 1\. Received: sequence_length=0"),
    ("truncating", "middle", r"`truncating` must be one of 'pre', 'post', 'head_tail'\. Received: truncating='middle'"),
    ("standardize", "lowr", r"did you mean 'lower'"),
])
def test_bad_preprocessing_values(field, value, message):
    with pytest.raises(ValueError, match=message):
        TextPreprocessingConfig(**{field: value})


@pytest.mark.parametrize("tokenizer", ["words", "wordpiece"])
def test_token_lengths_count_every_token_before_truncation(tokenizer):
    config = TextPreprocessingConfig(tokenizer=tokenizer, vocabulary_size=60, sequence_length=2)
    texts = np.array(["unbelievably good flight", "unbelievable delays", "", "good crew good crew good"] * 5,
                     dtype=object)
    vectorizer = make_vectorizer(config, fit_vocabulary(texts, config))
    ids = vectorizer(tf.constant(list(texts)))  # eager: keras-hub gives lists, TextVectorization a RaggedTensor
    expected = [len(row) for row in (ids if isinstance(ids, list) else ids.to_list())]
    assert token_lengths(texts, vectorizer).tolist() == expected and max(expected) > 2
    assert token_lengths(np.array([], dtype=object), vectorizer).tolist() == []
