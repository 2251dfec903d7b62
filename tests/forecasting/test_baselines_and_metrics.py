import numpy as np
import pytest
from statsmodels.tsa.holtwinters import ExponentialSmoothing

from kpipe.forecasting import baselines
from kpipe.forecasting.metrics import forecast_errors, mase_scale


def seasonal_series(n=400, m=12, seed=0):
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    return 50 + 0.05 * t + 10 * np.sin(2 * np.pi * t / m) + rng.normal(0, 1, n)


def test_naive_and_seasonal_naive_follow_their_formulas():
    y = np.arange(100, dtype=float) ** 1.5
    origins = np.array([30, 31, 50])
    np.testing.assert_array_equal(baselines.naive(y, origins, 4), np.repeat(y[[29, 30, 49]][:, None], 4, axis=1))
    forecast = baselines.seasonal_naive(y, origins, horizon=6, season_length=4)
    # step j uses y[t + j - 4 * (j // 4 + 1)]: steps 0..3 one season back, steps 4..5 two seasons back
    np.testing.assert_array_equal(forecast[0], y[[26, 27, 28, 29, 26, 27]])
    np.testing.assert_array_equal(forecast[2], y[[46, 47, 48, 49, 46, 47]])


@pytest.mark.parametrize("trend", [None, "add"])
def test_holt_winters_from_the_end_of_training_equals_statsmodels_forecast(trend):
    y, m, train_end, horizon = seasonal_series(), 12, 300, 20
    forecasts, params = baselines.holt_winters(y, train_end, np.array([train_end, train_end + 7]), horizon, m,
                                               trend=trend)
    reference = ExponentialSmoothing(y[:train_end], trend=trend, seasonal="add", seasonal_periods=m,
                                     initialization_method="heuristic").fit().forecast(horizon)
    np.testing.assert_allclose(forecasts[0], reference, rtol=1e-7)
    assert 0 <= params["smoothing_level"] <= 1
    # A later origin uses the 7 newer values with the same parameters: a different, still good forecast.
    assert not np.allclose(forecasts[1], reference[:horizon])
    assert np.mean(np.abs(forecasts[1] - y[307:327])) < 3


def test_forecast_errors_match_hand_computed_values():
    truth = np.array([[1.0, 2.0], [3.0, 4.0]])
    forecast = np.array([[2.0, 2.0], [1.0, 4.0]])
    errors = forecast_errors(truth, forecast, scale=2.0)
    assert errors["mae"] == pytest.approx(0.75)                      # (1 + 0 + 2 + 0) / 4
    assert errors["rmse"] == pytest.approx(np.sqrt(5 / 4))
    assert errors["mase"] == pytest.approx(0.375)
    assert errors["smape"] == pytest.approx((200 * 1 / 3 + 0 + 200 * 2 / 4 + 0) / 4)
    assert errors["per_step"]["mae"] == pytest.approx([1.5, 0.0])
    y = np.array([1.0, 5.0, 2.0, 7.0, 3.0])
    assert mase_scale(y, 2) == pytest.approx(np.mean([1.0, 2.0, 1.0]))
