"""Opening a model.keras: Keras' shared-object bookkeeping must not hand one Bidirectional's backward copy to
another (tests/unit/families/test_every_family.py's fresh-process load failed so once, by where CPython reused
memory)."""

import keras
import pytest

from kpipe.exports.open import load_keras_model_file


@keras.saving.register_keras_serializable(package="kpipe_tests")
class TwoBidirectionals(keras.layers.Layer):
    """Two Bidirectional wrappers copied from one LSTM object, built in `__init__` (as rnn_tagger's character
    BiLSTM is): during a load, the second copy sees the id the first recorded, as a freed LSTM's reused id would."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        template = keras.layers.LSTM(3, return_sequences=True)
        self.first = keras.layers.Bidirectional(template)
        self.second = keras.layers.Bidirectional(template)

    def call(self, x):
        return self.second(self.first(x))


def saved_model_file(tmp_path):
    inputs = keras.Input((4, 2))
    keras.Model(inputs, TwoBidirectionals()(inputs)).save(tmp_path / "model.keras")
    return tmp_path


def test_plain_keras_fails_on_the_collision_this_guards_against(tmp_path):
    with pytest.raises(Exception, match="go_backwards"):  # Keras wraps the ValueError in a TypeError
        keras.saving.load_model(saved_model_file(tmp_path) / "model.keras", compile=False)


def test_kpipes_loader_loads_it_and_leaves_keras_bookkeeping_as_it_was(tmp_path):
    from keras.src.saving import serialization_lib

    recording = serialization_lib.record_object_after_serialization
    model = load_keras_model_file(saved_model_file(tmp_path))
    assert isinstance(model.layers[-1], TwoBidirectionals)
    assert model.layers[-1].first.backward_layer.go_backwards and not model.layers[-1].first.forward_layer.go_backwards
    assert serialization_lib.record_object_after_serialization is recording
