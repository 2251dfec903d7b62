"""The private Keras API kpipe uses (kpipe.exports.keras_private) still does what kpipe needs: this file fails on
the Keras release that changes it, naming which."""

import keras
import numpy as np
import tensorflow as tf

from kpipe.exports import keras_private


def tiny_model():
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(optimizer="adam", loss="mse", metrics=["mae"])
    return model


def data():
    x = np.arange(24, dtype=np.float32).reshape(8, 3)
    return tf.data.Dataset.from_tensor_slices((x, x.sum(axis=1, keepdims=True))).batch(4)


def test_fit_starts_at_the_resume_epoch():
    model = tiny_model()
    keras_private.set_resume_epoch(model, 2)
    assert keras_private.resume_epoch(model) == 2
    history = model.fit(data(), epochs=3, verbose=0)
    assert history.epoch == [2]  # epochs 0 and 1 skipped, as after a restored checkpoint
    keras_private.set_resume_epoch(model, None)
    assert model.fit(data(), epochs=2, verbose=0).epoch == [0, 1]


def test_the_training_state_is_built_from_the_element_spec_alone():
    model = tiny_model()
    assert not model.optimizer.built
    assert keras_private.build_training_state(model, data().element_spec)  # a spec, no data to read
    assert model.optimizer.built and len(model.optimizer.variables) > 1


def test_keras_still_records_serialized_objects_where_the_loader_switches_it_off():
    from keras.src.saving import serialization_lib

    recording = serialization_lib.record_object_after_serialization
    with keras_private.no_sharing_of_copies():
        assert serialization_lib.record_object_after_serialization is not recording
    assert serialization_lib.record_object_after_serialization is recording
