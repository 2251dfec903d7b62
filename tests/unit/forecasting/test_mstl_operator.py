"""MSTL's forecast carried as an affine map of the window: equal to MSTL itself on windows it was not
read from, in raw and in scaled units, and refused when it cannot be (short window, non-linear trend)."""

import numpy as np
import pytest

from kpipe.errors import ConfigError
from kpipe.forecasting import baselines
from kpipe.forecasting.mstl_operator import mstl_operator
from tests.made_up_data import two_season_series

SEASONS, WINDOW, HORIZON = (6, 42), 126, 10


@pytest.fixture(scope="module")
def operator_and_series():
    y = two_season_series()
    trend_model = baselines.fit_mstl_trend(y[:300], SEASONS)
    operator = mstl_operator(trend_model, SEASONS, WINDOW, HORIZON, around=y[300 - WINDOW:300],
                             check_window=y[:WINDOW])
    return operator, trend_model, y


def test_the_map_equals_mstl_on_windows_it_was_not_read_from(operator_and_series):
    operator, trend_model, y = operator_and_series
    origins = [200, 333, 480]
    windows = np.stack([y[o - WINDOW:o] for o in origins])
    expected = np.stack([baselines.mstl_forecast(w, trend_model, SEASONS, HORIZON) for w in windows])
    np.testing.assert_allclose(operator(windows), expected, rtol=1e-9, atol=1e-7)
    assert np.mean(np.abs(expected - y[np.array(origins)[:, None] + np.arange(HORIZON)])) < 2  # a real forecast


def test_in_scaled_units_it_forecasts_scaled_values(operator_and_series):
    operator, _, y = operator_and_series
    mean, scale = 3.5, 7.25
    window = y[400 - WINDOW:400]
    scaled = operator.in_scaled_units(mean, scale)
    np.testing.assert_allclose(scaled(((window - mean) / scale)[None])[0], (operator(window[None])[0] - mean) / scale,
                               rtol=1e-9, atol=1e-9)


def test_a_window_shorter_than_two_seasons_is_refused(operator_and_series):
    _, trend_model, y = operator_and_series
    with pytest.raises(ConfigError, match="preprocessing.window >= 84"):
        mstl_operator(trend_model, SEASONS, 80, HORIZON, around=y[:80], check_window=y[:80])


def test_a_trend_model_that_is_not_linear_is_refused(operator_and_series):
    class SquaringTrend:  # forecasts the square of the last adjusted value: not affine
        model_ = {"method": "squares"}

        def forward(self, y, h):
            return {"mean": np.repeat(y[-1] ** 2, h)}

    _, _, y = operator_and_series
    with pytest.raises(ConfigError, match=r"trend model \(squares\) is not linear"):
        mstl_operator(SquaringTrend(), SEASONS, WINDOW, HORIZON, around=y[:WINDOW],
                      check_window=y[WINDOW:2 * WINDOW])
