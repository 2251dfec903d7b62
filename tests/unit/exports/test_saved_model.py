"""`write_saved_model`: the export carries the lookup tables and variables of what it tracks, answers as the
objects it was written from, and traces each model once, for its endpoints."""

import keras
import numpy as np
import tensorflow as tf

from kpipe.exports.saved_model import write_saved_model

TEXTS = ["great crew", "lost my bag", ""]


class Serving(tf.Module):
    """Raw strings -> probabilities through a vectorizer (a lookup table) and a model, as kpipe's exports do."""

    def __init__(self, vectorizer, model):
        super().__init__()
        self.vectorizer, self.model = vectorizer, model

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="text")])
    def serve(self, text):
        ids = tf.pad(self.vectorizer(text), [[0, 0], [0, 1]])
        return {"probabilities": self.model(ids, training=False)}


def counting_model(traces: list) -> keras.Model:
    inputs = keras.Input((None,), dtype="int32")
    x = keras.layers.Embedding(10, 4, mask_zero=True)(inputs)
    outputs = keras.layers.Dense(3, activation="softmax")(keras.layers.GlobalAveragePooling1D()(x))
    model = keras.Model(inputs, outputs)
    call = model.call
    model.call = lambda *args, **kwargs: traces.append(1) or call(*args, **kwargs)  # once per trace
    return model


def test_the_export_holds_the_tables_and_variables_and_answers_as_its_objects(tmp_path):
    traces = []
    vectorizer = keras.layers.TextVectorization(vocabulary=["great", "crew", "lost", "bag"])
    vectorizer(tf.constant(TEXTS))  # built, as the pipelines' vectorizers are when they export
    for tracked in ([], ["model"], ["module"]):  # the tables are found wherever they sit
        model = counting_model(traces)
        serving = Serving(vectorizer, model)
        roots = {"model": [model, vectorizer], "module": [serving]}.get(tracked[0] if tracked else "", [vectorizer])
        path = tmp_path / (tracked[0] if tracked else "vectorizer")
        traces.clear()
        answered = serving.serve(tf.constant(TEXTS))["probabilities"].numpy()  # a run evaluates, then exports
        write_saved_model(path, tracked=roots, endpoints={"serve": serving.serve})
        # Traced once, for the endpoint, and saved as that graph: not again by TensorFlow's save (a tf.function
        # saved as such is traced once more there, its cache keys differ), nor for the model's own default
        # signature (Keras' `ExportArchive.track` would trace that too: a third forward trace).
        assert len(traces) == 1, tracked
        loaded = tf.saved_model.load(str(path))
        np.testing.assert_allclose(loaded.serve(tf.constant(TEXTS))["probabilities"].numpy(), answered, atol=1e-6)
        if tracked == ["model"]:  # the variable lists `ExportArchive.track` writes, for fine-tuning the export
            assert len(loaded.trainable_variables) == len(model.trainable_variables) == 3
            assert len(loaded.variables) == 3
