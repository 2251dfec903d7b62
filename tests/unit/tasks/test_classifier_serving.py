"""A recurrent classifier served through XLA (ids padded to the full length, rows to a power of two) answers
as the Keras model does on the unpadded ids, for every batch size and text length."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from kpipe.families.rnn_classifier.config import RNNClassifierConfig
from kpipe.families.rnn_classifier.model import build_rnn_classifier
from kpipe.preprocessing.configs import TextPreprocessingConfig
from kpipe.preprocessing.text import encode_texts, make_vectorizer
from kpipe.tasks.classify.members import Member
from kpipe.tasks.classify.signatures import ClassifierServing

WORDS = "good bad fine awful movie plot the a was it".split()


@pytest.fixture(scope="module")
def member():
    keras.utils.set_random_seed(0)
    pre = TextPreprocessingConfig(sequence_length=12)
    vectorizer = make_vectorizer(pre, ["", "[UNK]", *WORDS])
    model = build_rnn_classifier(RNNClassifierConfig(vocabulary_size=len(WORDS) + 2, embedding_dim=8, units=[6],
                                                     num_classes=3))
    return Member(model, lambda text: encode_texts(vectorizer, text, pre), None, [vectorizer], [], [], {},
                  compiled_length=pre.sequence_length)


@pytest.mark.parametrize("rows", [1, 3, 4, 7])
def test_compiled_serving_equals_the_keras_model_on_unpadded_ids(member, rows):
    rng = np.random.default_rng(rows)
    texts = [" ".join(rng.choice(WORDS, rng.integers(0, 20))) for _ in range(rows)]  # some over 12 words, one may be ""
    serving = ClassifierServing([member], [1.0], ["a", "b", "c"])
    assert serving.compiled[0] is not None  # the XLA path is the one under test
    served = serving.serve(tf.constant(texts))["probabilities"].numpy()
    ids = member.encode(tf.constant(texts))  # padded to this batch's longest text only
    np.testing.assert_allclose(served, member.model(ids, training=False).numpy(), atol=1e-5)
    assert served.shape == (rows, 3)
