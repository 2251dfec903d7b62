"""Every classify family ends in the same head: several labels per text give one independent sigmoid per label."""

import numpy as np
import pytest

from kpipe.families.bag_of_ngrams.config import BagOfNgramsConfig
from kpipe.families.bag_of_ngrams.model import build_bag_of_ngrams
from kpipe.layers.classifier_head import head_units
from kpipe.families.pretrained_classifier.config import PretrainedClassifierConfig
from kpipe.families.rnn_classifier.config import RNNClassifierConfig
from kpipe.families.rnn_classifier.model import build_rnn_classifier
from kpipe.families.transformer_classifier.config import TransformerClassifierConfig
from kpipe.families.transformer_classifier.model import build_transformer_classifier


def test_the_head_by_task():
    assert head_units(2) == (1, "sigmoid") and head_units(5) == (5, "softmax")
    assert head_units(2, multi_label=True) == (2, "sigmoid") and head_units(5, multi_label=True) == (5, "sigmoid")


def families():
    import scipy.sparse  # noqa: F401  (the n-gram model's input is sparse)
    ids = np.array([[3, 4, 5, 0], [6, 7, 0, 0]], np.int32)
    yield "rnn", build_rnn_classifier(RNNClassifierConfig(vocabulary_size=20, num_classes=4, multi_label=True,
                                                          embedding_dim=4, units=(4,))), ids
    yield "transformer", build_transformer_classifier(TransformerClassifierConfig(
        vocabulary_size=20, num_classes=4, multi_label=True, sequence_length=4, hidden_dim=8, num_heads=2,
        intermediate_dim=8, num_layers=1)), ids
    import tensorflow as tf

    features = tf.sparse.from_dense(np.array([[1.0, 0, 2, 0, 0, 1], [0, 1, 0, 0, 3, 0]], np.float32))
    yield "ngrams", build_bag_of_ngrams(BagOfNgramsConfig(vocabulary_size=6, num_classes=4, multi_label=True,
                                                          weighting="tfidf")), features


@pytest.mark.parametrize("family", ["rnn", "transformer", "ngrams", "pretrained"])
def test_every_family_gives_one_independent_probability_per_label(family):
    if family == "pretrained":
        from kpipe.families.pretrained_classifier.model import build_pretrained_classifier
        from tests.checkpoints import tiny_backbone

        model = build_pretrained_classifier(PretrainedClassifierConfig(preset="x", num_classes=4, multi_label=True),
                                            tiny_backbone())
        inputs = {"token_ids": np.array([[2, 5, 3, 0]]), "padding_mask": np.array([[1, 1, 1, 0]]),
                  "segment_ids": np.zeros((1, 4), np.int32)}
    else:
        model, inputs = next((m, x) for name, m, x in families() if name == family)
    output = np.asarray(model(inputs, training=False))
    assert output.shape[-1] == 4 and model.get_layer("probabilities").activation.__name__ == "sigmoid"
    assert ((output > 0) & (output < 1)).all() and not np.allclose(output.sum(axis=-1), 1.0)
