import keras
import numpy as np
import pytest

from kpipe.forecasting.mstl_operator import AffineForecast
from kpipe.families.rnn_forecaster.config import RNNForecasterConfig
from kpipe.families.rnn_forecaster.model import build_rnn_forecaster, fit_linear_path, set_mstl_baseline


def test_output_is_one_value_per_horizon_step():
    config = RNNForecasterConfig(cell="gru", units=(8, 4), conv_filters=4, conv_stride=2, window=24, horizon=6,
                                 num_features=3)
    model = build_rnn_forecaster(config)
    assert model.output_shape == (None, 6)
    assert model(np.zeros((5, 24, 3), "float32")).shape == (5, 6)


def test_seasonal_naive_path_is_exact_when_the_learned_parts_are_zero():
    config = RNNForecasterConfig(units=(4,), window=10, horizon=3, season_length=4, add_baseline="seasonal_naive",
                                 linear_steps=5)
    model = build_rnn_forecaster(config)
    for name in ("forecast", "linear_autoregression"):
        layer = model.get_layer(name)
        layer.set_weights([np.zeros_like(w) for w in layer.get_weights()])
    window = np.random.default_rng(0).normal(size=(2, 10, 1)).astype("float32")
    # y[t + j - 4] for j = 0, 1, 2, with t = 10: window steps 6, 7, 8
    np.testing.assert_allclose(model(window).numpy(), window[:, 6:9, 0], rtol=1e-6)


def test_window_too_short_for_the_paths_is_refused():
    with pytest.raises(ValueError, match="linear_steps=20 is longer than window=10"):
        build_rnn_forecaster(RNNForecasterConfig(window=10, horizon=2, linear_steps=20))
    with pytest.raises(ValueError, match="needs horizon <= season_length <= window"):
        build_rnn_forecaster(RNNForecasterConfig(window=10, horizon=2, season_length=12, add_baseline="seasonal_naive"))


def test_keras_file_round_trip_keeps_the_baseline_layers(tmp_path):
    model = build_rnn_forecaster(RNNForecasterConfig(units=(4,), window=8, horizon=2, season_length=4,
                                                     add_baseline="naive", linear_steps=4))
    model.save(tmp_path / "m.keras")
    restored = keras.saving.load_model(tmp_path / "m.keras")
    window = np.random.default_rng(1).normal(size=(3, 8, 1)).astype("float32")
    np.testing.assert_allclose(restored(window).numpy(), model(window).numpy(), rtol=1e-6)


def test_linear_path_is_the_least_squares_fit_over_the_baseline():
    rng = np.random.default_rng(0)
    config = RNNForecasterConfig(units=(4,), window=12, horizon=3, season_length=6, add_baseline="seasonal_naive",
                                 linear_steps=5, linear_ridge=0.0, num_features=2)
    inputs = rng.normal(size=(200, 12, 2)).astype("float32")
    targets = rng.normal(size=(200, 3))
    model = build_rnn_forecaster(config)
    fit_linear_path(model, config, inputs, targets)
    # Independent reference: NumPy's least squares of (targets - baseline) on [recent 5 steps, 1].
    baseline = inputs[:, 6:9, 0]
    design = np.concatenate([inputs[:, 7:, 0], np.ones((200, 1))], axis=1)
    solution = np.linalg.lstsq(design, targets - baseline, rcond=None)[0]
    kernel, bias = model.get_layer("linear_autoregression").get_weights()
    np.testing.assert_allclose(kernel, solution[:-1], atol=1e-5)
    np.testing.assert_allclose(bias, solution[-1], atol=1e-5)
    assert not model.get_layer("linear_autoregression").trainable
    # The recurrent correction starts at zero, so the untrained model is baseline + linear fit.
    np.testing.assert_allclose(model(inputs).numpy(), baseline + design @ solution, atol=1e-4)


def test_mstl_baseline_applies_its_affine_map_and_the_linear_path_fits_what_it_leaves():
    rng = np.random.default_rng(1)
    config = RNNForecasterConfig(units=(4,), window=12, horizon=3, season_length=6, add_baseline="mstl",
                                 linear_steps=4, linear_ridge=0.0, num_features=2)
    operator = AffineForecast(rng.normal(size=(3, 12)), rng.normal(size=3))
    inputs = rng.normal(size=(200, 12, 2)).astype("float32")
    targets = rng.normal(size=(200, 3))
    model = build_rnn_forecaster(config)
    set_mstl_baseline(model, operator)
    fit_linear_path(model, config, inputs, targets)
    baseline = inputs[:, :, 0].astype(np.float64) @ operator.matrix.T + operator.offset  # NumPy, by hand
    design = np.concatenate([inputs[:, 8:, 0], np.ones((200, 1))], axis=1)
    solution = np.linalg.lstsq(design, targets - baseline, rcond=None)[0]
    np.testing.assert_allclose(model.get_layer("linear_autoregression").get_weights()[0], solution[:-1], atol=1e-4)
    assert not model.get_layer("mstl").trainable
    np.testing.assert_allclose(model(inputs).numpy(), baseline + design @ solution, atol=1e-4)


def test_mstl_baseline_needs_two_seasons_in_the_window():
    config = RNNForecasterConfig(window=10, horizon=3, season_length=6, add_baseline="mstl")
    assert "window >= 12" in config.window_problem()
    with pytest.raises(ValueError, match="two seasons"):
        build_rnn_forecaster(config)
