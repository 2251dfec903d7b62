"""Writing a network as ONNX through Keras' exporter: the file answers as the model does, and the conversion's own
chatter (tf2onnx's INFO lines, a NumPy FutureWarning) never reaches the user of `kpipe export`."""

import logging
import warnings

import keras
import numpy as np


def test_an_onnx_file_answers_as_the_model_and_the_conversion_logs_nothing(tmp_path, caplog):
    import onnxruntime

    from kpipe.exports.onnx_writer import write_onnx

    inputs = keras.Input((3,), name="x")
    model = keras.Model(inputs, keras.layers.Dense(2, name="dense")(inputs))
    x = np.random.default_rng(0).normal(size=(4, 3)).astype("float32")
    expected = model(x)  # Keras' exporter takes models that have been called
    caplog.set_level(logging.INFO)
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        write_onnx(model, tmp_path / "model.onnx", "none", {"kind": "dense"})
    assert [r.getMessage() for r in caplog.records] == []
    assert [str(w.message) for w in warned if issubclass(w.category, FutureWarning)] == []
    session = onnxruntime.InferenceSession(str(tmp_path / "model.onnx"))
    np.testing.assert_allclose(session.run(None, {session.get_inputs()[0].name: x})[0], expected, atol=1e-6)
