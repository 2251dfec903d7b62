import numpy as np
import pytest

from kpipe.datasets.time_series import TimeSeries
from kpipe.errors import DataError
from kpipe.preprocessing.windows import Scaler, make_window_dataset, split_origins, window_arrays
from kpipe.preprocessing.configs import WindowConfig


def series(n=60, features=2):
    values = np.stack([np.arange(n, dtype=np.float32) * (f + 1) + 100 * f for f in range(features)], axis=1)
    return TimeSeries(values, [f"f{i}" for i in range(features)], None, train_end=40, validation_end=50)


def test_windows_pair_the_past_with_the_next_horizon_of_the_target():
    s = series()
    config = WindowConfig(window=5, horizon=3, season_length=4)
    origins = split_origins(s, "test", config)
    np.testing.assert_array_equal(origins, np.arange(50, 58))  # targets [t, t+3) inside rows 50..59
    inputs, targets = window_arrays(s.values, origins, config)
    assert inputs.shape == (8, 5, 2) and targets.shape == (8, 3)
    np.testing.assert_array_equal(inputs[0], s.values[45:50])          # the 5 steps before the origin
    np.testing.assert_array_equal(targets[0], s.values[50:53, 0])      # the next 3 target values
    batches = list(make_window_dataset(s.values, origins, config, batch_size=3))
    np.testing.assert_array_equal(np.concatenate([x for x, _ in batches]), inputs)
    np.testing.assert_array_equal(np.concatenate([y for _, y in batches]), targets)


def test_train_windows_never_reach_into_later_splits():
    s = series()
    config = WindowConfig(window=5, horizon=3)
    for split, end in (("train", 40), ("validation", 50)):
        origins = split_origins(s, split, config)
        assert origins.max() + config.horizon <= end
    x, y = zip(*make_window_dataset(s.values, split_origins(s, "train", config), config, batch_size=4,
                                    shuffle=True, seed=1))
    assert np.concatenate(y).max() <= s.values[39, 0]  # no target from validation or test rows


def test_scaler_uses_only_the_rows_it_is_fitted_on():
    s = series()
    scaler = Scaler.fit(s.values[:s.train_end])
    np.testing.assert_allclose(scaler.mean, s.values[:40].mean(axis=0))
    np.testing.assert_allclose(scaler.scale, s.values[:40].std(axis=0))
    scaled = scaler.transform(s.values)
    np.testing.assert_allclose(scaler.inverse_target(scaled[:, 0]), s.values[:, 0], rtol=1e-6)


def test_a_split_too_short_for_the_window_is_a_clear_error():
    with pytest.raises(DataError, match="the test split \\(10 steps\\) has no room for a window of 5 steps "
                                        "followed by a horizon of 12"):
        split_origins(series(), "test", WindowConfig(window=5, horizon=12))
