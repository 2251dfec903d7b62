"""Recurrent classifiers written as ONNX's fused LSTM/GRU operators answer as the Keras model does."""

import numpy as np
import pytest

from kpipe.exports.onnx_recurrent import recurrent_onnx
from kpipe.families.rnn_classifier.config import RNNClassifierConfig
from kpipe.families.rnn_classifier.model import build_rnn_classifier

ort = pytest.importorskip("onnxruntime")

# Right-padded ids of different lengths, one full row and one empty text (all padding).
IDS = np.array([[5, 9, 3, 0, 0, 0, 0], [7, 1, 2, 8, 4, 6, 2], [3, 0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0, 0]],
               np.int32)


def onnx_answers(model, ids):
    onnx_model = recurrent_onnx(model)
    assert onnx_model is not None, "the plain stack is written as fused operators, not left to Keras"
    session = ort.InferenceSession(onnx_model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {"token_ids": ids})[0]


@pytest.mark.parametrize("cell,bidirectional,units,pooling,classes", [
    ("lstm", True, [8], "last", 3),
    ("lstm", True, [8, 6], "last", 2),
    ("gru", True, [8], "last", 3),
    ("lstm", False, [8], "last", 3),
    ("gru", False, [6, 5], "mean", 2),
    ("lstm", True, [8], "max", 3),
    ("gru", True, [8], "max_mean", 4),
])
def test_the_fused_graph_gives_the_keras_probabilities(cell, bidirectional, units, pooling, classes):
    config = RNNClassifierConfig(vocabulary_size=10, num_classes=classes, embedding_dim=4, units=units, cell=cell,
                                 bidirectional=bidirectional, pooling=pooling, dropout=0.3)  # inactive at inference
    model = build_rnn_classifier(config)
    rng = np.random.default_rng(0)
    model.set_weights([rng.normal(0, 0.5, w.shape).astype("float32") for w in model.get_weights()])
    expected = model.predict(IDS, verbose=0)
    np.testing.assert_allclose(onnx_answers(model, IDS), expected, rtol=1e-5, atol=1e-6)
    # Trailing padding changes nothing (each row's length comes from its ids).
    padded = np.pad(IDS, [(0, 0), (0, 3)])
    np.testing.assert_allclose(onnx_answers(model, padded), expected, rtol=1e-5, atol=1e-6)


def test_a_model_the_operators_do_not_compute_is_left_to_keras():
    import keras

    config = RNNClassifierConfig(vocabulary_size=10, num_classes=3, embedding_dim=4, units=[4], dropout=0.0)
    model = build_rnn_classifier(config)
    model.get_layer("bidirectional_0").forward_layer.cell.activation = keras.activations.relu
    assert recurrent_onnx(model) is None
