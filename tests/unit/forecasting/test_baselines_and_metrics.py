import numpy as np
import pytest

from kpipe.forecasting import baselines
from kpipe.evaluation.forecast_metrics import forecast_errors, mase_scale
from tests.made_up_data import two_season_series


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


def test_mstl_decomposition_equals_statsforecasts_when_every_point_is_smoothed():
    from statsforecast.mstl import mstl

    y = two_season_series()
    ours, theirs = baselines.mstl_decomposition(y, [42, 6], r_jumps=False), mstl(y, [6, 42])
    for column in ("trend", "remainder", "seasonal6", "seasonal42"):
        np.testing.assert_allclose(ours[column], theirs[column].to_numpy(), rtol=1e-12, atol=1e-9)
    # R's jumps interpolate the smoothers: close to, but not the same as, every point.
    jumped = baselines.mstl_decomposition(y, [6, 42])
    assert not np.allclose(jumped["trend"], ours["trend"])
    np.testing.assert_allclose(jumped["seasonal42"], ours["seasonal42"], atol=1.0)


def test_mstl_from_every_origin_equals_statsforecasts_forward_and_predict():
    from statsforecast.models import MSTL, AutoETS

    y, fit_end, horizon = two_season_series(), 500, 10
    origins = np.array([500, 517, 580])
    forecasts, info = baselines.mstl(y, fit_end, origins, horizon, (6, 42), r_jumps=False)
    library = MSTL(season_length=[6, 42], trend_forecaster=AutoETS(model="ZZN")).fit(y[:fit_end])
    np.testing.assert_allclose(forecasts[0], library.predict(horizon)["mean"], rtol=1e-9)
    for row, origin in enumerate(origins):
        np.testing.assert_allclose(forecasts[row], library.forward(y[:origin], h=horizon)["mean"], rtol=1e-9)
    assert info["trend_model"].startswith("ETS(")
    truth = y[origins[:, None] + np.arange(horizon)]
    assert np.mean(np.abs(forecasts - truth)) < 2  # noise sd 1: the two seasons are captured
    jumped, _ = baselines.mstl(y, fit_end, origins, horizon, (6, 42))
    assert np.mean(np.abs(jumped - truth)) < 2


def test_auto_ets_from_the_first_origin_equals_statsforecasts_predict():
    from statsforecast.models import AutoETS

    y, fit_end = seasonal_series(), 300
    forecasts, info = baselines.auto_ets(y, fit_end, np.array([300, 310]), 12, season_length=12)
    library = AutoETS(season_length=12).fit(y[:fit_end])
    np.testing.assert_allclose(forecasts[0], library.predict(12)["mean"], rtol=1e-9)
    np.testing.assert_allclose(forecasts[1], library.forward(y[:310], h=12)["mean"], rtol=1e-9)
    assert info == {"model": library.model_["method"], "season_length": 12}
    _, long_season = baselines.auto_ets(y, fit_end, np.array([300]), 12, season_length=48)
    assert long_season["season_length"] == 1  # statsforecast's ETS has no seasons beyond 24 steps


def test_conformal_half_widths_and_coverage_by_hand():
    from kpipe.forecasting.intervals import conformal_half_widths, coverage

    # 9 calibration windows, 2 steps; errors at step 0 are 1..9, at step 1 are 10, 20, ... 90.
    forecast = np.zeros((9, 2))
    truth = np.stack([np.arange(1, 10), 10 * np.arange(1, 10)], axis=1)[::-1].astype(float)
    # level 80: rank ceil(10 * 0.8) = 8 -> the 8th smallest error; level 95: rank 10 > 9 -> unbounded
    np.testing.assert_array_equal(conformal_half_widths(truth, forecast, 80), [8.0, 80.0])
    assert np.all(np.isinf(conformal_half_widths(truth, forecast, 95)))
    assert coverage(truth, forecast, np.array([8.0, 80.0])) == pytest.approx(16 / 18)
    assert coverage(np.array([[1.0, 5.0]]), np.array([[0.0, 0.0]]), np.array([1.0, 4.0])) == 0.5


def test_forecast_errors_match_hand_computed_values():
    truth = np.array([[1.0, 2.0], [3.0, 4.0]])
    forecast = np.array([[2.0, 2.0], [1.0, 4.0]])
    errors = forecast_errors(truth, forecast, scale=2.0)
    assert errors["mae"] == pytest.approx(0.75)                      # (1 + 0 + 2 + 0) / 4
    assert errors["rmse"] == pytest.approx(np.sqrt(5 / 4))
    assert errors["mase"] == pytest.approx(0.375)
    assert errors["smape"] == pytest.approx((200 * 1 / 3 + 0 + 200 * 2 / 4 + 0) / 4)
    assert errors["mape"] == pytest.approx((100 * 1 / 1 + 0 + 100 * 2 / 3 + 0) / 4)
    assert errors["per_step"]["mape"] == pytest.approx([(100 + 200 / 3) / 2, 0.0])
    zero_truth = forecast_errors(np.zeros((2, 1)), np.ones((2, 1)), scale=1.0)
    assert zero_truth["mape"] is None and zero_truth["mae"] == 1.0  # no MAPE without a nonzero truth
    assert errors["per_step"]["mae"] == pytest.approx([1.5, 0.0])
    y = np.array([1.0, 5.0, 2.0, 7.0, 3.0])
    assert mase_scale(y, 2) == pytest.approx(np.mean([1.0, 2.0, 1.0]))
