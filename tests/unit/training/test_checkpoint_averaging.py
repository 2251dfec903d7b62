"""Checkpoint averaging: per-epoch weight files and their element-wise mean."""

import keras
import numpy as np

from kpipe.training.checkpoint_averaging import EpochWeights, averaged_weights


def test_every_epoch_is_saved_and_the_average_is_the_numpy_mean(tmp_path):
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4), keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    x, y = np.random.default_rng(0).normal(size=(32, 3)), np.random.default_rng(1).normal(size=(32, 1))
    seen = []

    class Record(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            seen.append([w.copy() for w in self.model.get_weights()])

    keeper = EpochWeights(tmp_path / "weights")
    model.fit(x, y, epochs=3, batch_size=8, verbose=0, callbacks=[Record(), keeper])
    assert sorted(p.name for p in (tmp_path / "weights").iterdir()) == [
        "epoch_001.weights.h5", "epoch_002.weights.h5", "epoch_003.weights.h5"]
    mean = averaged_weights(model, [keeper.path(2), keeper.path(3)])
    for got, second, third in zip(mean, seen[1], seen[2]):
        np.testing.assert_allclose(got, (second + third) / 2, rtol=1e-6)
    assert not np.allclose(mean[0], seen[2][0])  # the epochs differ, so the mean is neither


def test_a_worker_that_does_not_write_saves_nothing(tmp_path):
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    model.fit(np.ones((4, 2)), np.ones((4, 1)), epochs=1, verbose=0,
              callbacks=[EpochWeights(tmp_path / "weights", write=False)])
    assert not (tmp_path / "weights").exists()
