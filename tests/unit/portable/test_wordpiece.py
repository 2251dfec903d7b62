"""keras-hub's WordPiece tokenization and BERT packing in NumPy (`kpipe.portable.wordpiece`) equal to the
TensorFlow preprocessing a pretrained classifier's export runs, on the tweets' test split and edge cases."""

import keras_hub
import numpy as np
import pytest
import tensorflow as tf

from kpipe.datasets.text_classification import TextClassificationDataConfig, load_text_classification
from kpipe.portable.wordpiece import WordPieceIds
from kpipe.pretrained.inputs import encode, portable_settings, with_truncation

EDGE_CASES = ["", "ÉTÉ Café İstanbul ÀÖ ﬁne", "can't won't", "a\u00a0b\tc\u200bd\u00ade", "!!!:)", "x" * 150,
              "emoji 😀 and ünïcödé", "漢字とかな", "[CLS] [UNK] [SEP] inside", "word " * 40]


@pytest.fixture(scope="module")
def tweets_and_vocabulary(tweet_wordpieces):
    splits = load_text_classification(TextClassificationDataConfig(source="embedded", name="tweets-sentiment"))
    vocabulary = tweet_wordpieces  # tests/conftest.py: learnt once per session
    return [str(t) for t in splits.test.texts[:1500]] + EDGE_CASES, vocabulary


@pytest.mark.slow
@pytest.mark.parametrize("truncating", ["post", "pre", "head_tail"])
def test_packed_word_pieces_equal_the_presets_preprocessor(tweets_and_vocabulary, truncating):
    texts, vocabulary = tweets_and_vocabulary
    tokenizer = keras_hub.models.BertTokenizer(vocabulary=vocabulary, lowercase=True)
    preprocessor = with_truncation(keras_hub.models.BertTextClassifierPreprocessor(tokenizer, sequence_length=20),
                                   truncating)
    expected = {k: v.numpy() for k, v in encode(preprocessor, tf.constant(texts)).items()}
    ours = WordPieceIds(vocabulary, portable_settings(preprocessor, truncating))(texts)
    assert sorted(ours) == sorted(expected)
    for name in expected:
        np.testing.assert_array_equal(ours[name].astype(np.int32), expected[name].astype(np.int32), err_msg=name)
