"""Baseline forecasts on the same origins as the model: naive, seasonal naive, Holt-Winters.

All take the raw target series (original units) and forecast `horizon` steps from each origin t,
using only `target[:t]`. Holt-Winters comes from statsmodels, fitted on the training split; its
smoothing parameters are then held fixed while it filters the later data, so each origin's
forecast uses the data up to that origin and nothing after it.
"""

from __future__ import annotations

import logging
import warnings

import numpy as np

log = logging.getLogger(__name__)


def naive(target: np.ndarray, origins: np.ndarray, horizon: int) -> np.ndarray:
    """The last observed value, repeated: (origins, horizon)."""
    return np.repeat(target[origins - 1][:, None], horizon, axis=1)


def seasonal_naive(target: np.ndarray, origins: np.ndarray, horizon: int, season_length: int) -> np.ndarray:
    """The value one season earlier (`y[t + j - m * (j // m + 1)]`): (origins, horizon)."""
    steps = np.arange(horizon)
    lags = season_length * (steps // season_length + 1)
    index = origins[:, None] + steps[None, :] - lags[None, :]
    if index.min() < 0:
        raise ValueError(f"seasonal naive needs {season_length} steps of history before the first origin")
    return target[index]


def holt_winters(target: np.ndarray, train_end: int, origins: np.ndarray, horizon: int, season_length: int,
                 trend: str | None = None) -> tuple[np.ndarray, dict]:
    """Additive Holt-Winters (statsmodels `ExponentialSmoothing`) forecasts from each origin.

    Args:
        target: the whole series.
        train_end: the parameters are estimated on `target[:train_end]`.
        origins, horizon: as for the other baselines.
        season_length: the seasonal period m (needs at least two full seasons of training data).
        trend: None or "add".

    Returns:
        (forecasts (origins, horizon), the fitted parameters as plain floats).
    """
    from statsmodels.tsa.holtwinters import ExponentialSmoothing

    target = np.asarray(target, dtype=np.float64)
    options = dict(trend=trend, seasonal="add", seasonal_periods=season_length)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # statsmodels' convergence chatter; the result is checked below
        fitted = ExponentialSmoothing(target[:train_end], initialization_method="heuristic", **options).fit()
        p = fitted.params
        known = dict(initial_level=p["initial_level"], initial_seasonal=p["initial_seasons"])
        smoothing = dict(smoothing_level=p["smoothing_level"], smoothing_seasonal=p["smoothing_seasonal"])
        if trend:
            known["initial_trend"] = p["initial_trend"]
            smoothing["smoothing_trend"] = p["smoothing_trend"]
        # Same parameters, filtered over the data up to the last origin: the states at t-1 give the
        # forecast from origin t, by statsmodels' own forecast formula (checked against it in the tests).
        filtered = ExponentialSmoothing(target[:int(origins.max())], initialization_method="known",
                                        **known, **options).fit(optimized=False, **smoothing)
    level, season = np.asarray(filtered.level), np.asarray(filtered.season)
    slope = np.asarray(filtered.trend) if trend else np.zeros_like(level)
    steps = np.arange(horizon)
    state = origins - 1
    # statsmodels' own forecast reads the seasonal states (t - 1 - m + ((j + 1) mod m)): the results'
    # `season` array lags the update by one step, so the newest state is never used (pinned in tests).
    season_index = state[:, None] - season_length + (steps[None, :] + 1) % season_length
    forecasts = level[state][:, None] + (steps[None, :] + 1) * slope[state][:, None] + season[season_index]
    params = {k: float(v) for k, v in p.items() if np.ndim(v) == 0 and v is not None and np.isfinite(v)}
    log.info("Holt-Winters (additive, m=%d, trend=%s) fitted on %d steps: %s", season_length, trend, train_end,
             {k: round(v, 4) for k, v in params.items() if k.startswith("smoothing")})
    return forecasts, params
