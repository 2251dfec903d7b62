import keras
import numpy as np
import pytest
import tensorflow as tf

from kpipe.training import TrainingConfig, make_strategy, read_history, train_model


def tiny_data():
    x = np.random.default_rng(0).integers(1, 10, size=(64, 5)).astype("int32")
    y = (x[:, 0] > 5).astype("float32")
    return tf.data.Dataset.from_tensor_slices((x, y)).batch(16)


def build():
    inputs = keras.Input((5,), dtype="int32")
    h = keras.layers.Embedding(10, 4)(inputs)
    h = keras.layers.GlobalAveragePooling1D()(h)
    return keras.Model(inputs, keras.layers.Dense(1, activation="sigmoid")(h))


class Crash(keras.callbacks.Callback):
    """Stands in for a kill: stops the process after the given epoch is saved."""

    def __init__(self, after_epoch):
        super().__init__()
        self.after_epoch = after_epoch

    def on_epoch_end(self, epoch, logs=None):
        if epoch == self.after_epoch:
            raise KeyboardInterrupt


def test_auto_strategy_on_cpu_is_the_default_strategy():
    if tf.config.list_logical_devices("GPU"):
        pytest.skip("machine has a GPU")
    strategy = make_strategy("auto")
    assert strategy.num_replicas_in_sync == 1
    assert strategy is tf.distribute.get_strategy()


def test_rerun_after_interruption_resumes_from_last_finished_epoch(tmp_path):
    config = TrainingConfig(epochs=4, early_stopping_patience=0)
    kwargs = dict(loss="binary_crossentropy", metrics=["accuracy"], train_data=tiny_data(),
                  validation_data=tiny_data(), config=config, work_dir=tmp_path, strategy=make_strategy("default"))
    with pytest.raises(KeyboardInterrupt):
        train_model(build, extra_callbacks=[Crash(after_epoch=1)], **kwargs)
    assert len(read_history(tmp_path / "history.csv")) == 2

    epochs_run = []
    counter = keras.callbacks.LambdaCallback(on_epoch_begin=lambda epoch, logs: epochs_run.append(epoch))
    model, history = train_model(build, extra_callbacks=[counter], **kwargs)
    assert epochs_run == [2, 3]  # resumed, not restarted
    assert len(history) == 4 and all("val_loss" in h and "epoch_seconds" in h for h in history)


def test_same_seed_gives_same_weights(tmp_path):
    def run(folder):
        model, _ = train_model(build, loss="binary_crossentropy", metrics=[], train_data=tiny_data(),
                               validation_data=tiny_data(), config=TrainingConfig(epochs=1, seed=5),
                               work_dir=tmp_path / folder, strategy=make_strategy("default"))
        return model.get_weights()

    for a, b in zip(run("a"), run("b")):
        np.testing.assert_array_equal(a, b)
