"""MSTL's forecast as one affine map of the input window, so that a Keras model (and its SavedModel) can carry it.

With STL's robustness iterations off (statsmodels' default, and MSTL's) every smoother of the
decomposition is a fixed linear filter of the series, and an ETS trend model without a multiplicative
trend forecasts linearly from the seasonally adjusted series once its parameters are fixed. So MSTL's
forecast after a window x of fixed length is `A x + c`. A's columns are read off by forecasting after a
real window with one step raised at a time (around real data: multiplicative-error ETS is affine only
where its forecasts stay positive), and the map is checked against MSTL itself on another real window
(a trend model that is not linear fails that check with a clear error).

Its cost is one decomposition per window step (about 3 minutes for 2,016 half-hours on 2 CPU cores),
paid once per training series and window (`fitted_mstl_operator` keeps it in kpipe's cache folder):
the forecaster's `mstl` layer then applies it as a matrix product.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import os
import time
import uuid

import numpy as np

from kpipe.cache import cache_root
from kpipe.errors import ConfigError
from kpipe.forecasting.baselines import fit_mstl_trend, mstl_forecast

log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class AffineForecast:
    """forecast = matrix @ window + offset, for (window,) inputs and (horizon,) outputs."""

    matrix: np.ndarray  # (horizon, window)
    offset: np.ndarray  # (horizon,)

    def __call__(self, windows: np.ndarray) -> np.ndarray:
        """Forecasts (n, horizon) after windows (n, window)."""
        return np.asarray(windows, np.float64) @ self.matrix.T + self.offset

    def in_scaled_units(self, mean: float, scale: float) -> "AffineForecast":
        """The same forecast for inputs and outputs scaled as (x - mean) / scale (a model's units):
        ((A (scale z + mean) + c) - mean) / scale = A z + (mean A 1 + c - mean) / scale."""
        return AffineForecast(self.matrix, (mean * self.matrix.sum(axis=1) + self.offset - mean) / scale)


def mstl_operator(trend_model, season_lengths: tuple[int, ...], window: int, horizon: int,
                  around: np.ndarray, check_window: np.ndarray) -> AffineForecast:
    """MSTL's forecast (`baselines.mstl_forecast` with `trend_model` fixed) as an affine map of the last
    `window` values.

    Args:
        trend_model: from `baselines.fit_mstl_trend` on the training series.
        season_lengths: every season; the window must hold two of the longest (STL's minimum).
        around: a real window (window,) to read the map off around.
        check_window: another real window (window,), on which the map must reproduce MSTL.

    Raises:
        ConfigError: the window is shorter than two seasons, or the trend model is not linear.
    """
    periods = sorted(int(p) for p in season_lengths)
    if window < 2 * periods[-1]:
        raise ConfigError(f"an MSTL baseline needs a window of at least two seasons ({2 * periods[-1]} steps); "
                          f"set preprocessing.window >= {2 * periods[-1]} (it is {window})")

    def forecast(history: np.ndarray) -> np.ndarray:
        return mstl_forecast(history, trend_model, periods, horizon)

    started = time.perf_counter()
    around = np.asarray(around, np.float64)
    base = forecast(around)
    step_size = float(np.std(around)) or 1.0  # a step of the data's own size: well-conditioned differences
    matrix = np.empty((horizon, window))
    for step in range(window):
        raised = around.copy()
        raised[step] += step_size
        matrix[:, step] = (forecast(raised) - base) / step_size
    operator = AffineForecast(matrix, base - matrix @ around)
    check_window = np.asarray(check_window, np.float64)
    expected = forecast(check_window)
    error = float(np.max(np.abs(operator(check_window[None])[0] - expected)))
    if error > 1e-6 * (1.0 + float(np.max(np.abs(expected)))):
        raise ConfigError(f"MSTL's trend model ({trend_model.model_['method']}) is not linear in the data "
                          f"(the affine map is off by {error:.3g}); use model.add_baseline='seasonal_naive'")
    log.info("MSTL as an affine map of %d steps (seasons %s, trend %s): %.0f s", window, periods,
             trend_model.model_["method"], time.perf_counter() - started)
    return operator


CACHE_FORMAT = 1  # bump when the map's computation changes


def fitted_mstl_operator(train_target: np.ndarray, season_lengths: tuple[int, ...], window: int,
                         horizon: int) -> AffineForecast:
    """MSTL with its trend model fitted on `train_target`, as an affine map of the last `window` values
    (read off around the last training window, checked on the first). Kept in kpipe's cache folder,
    keyed by the series and the shapes, so the next run on the same training data (a resumed one,
    another network on top) reads it back; writing is best effort and atomic."""
    import statsforecast

    train_target = np.asarray(train_target, np.float64)
    periods = tuple(sorted(int(p) for p in season_lengths))
    key = hashlib.sha256(f"{CACHE_FORMAT}|{statsforecast.__version__}|{periods}|{window}|{horizon}|".encode()
                         + train_target.tobytes()).hexdigest()[:24]
    path = cache_root() / "mstl_maps" / f"{key}.npz"
    try:
        with np.load(path) as saved:
            log.info("MSTL as an affine map of %d steps: read from %s", window, path)
            return AffineForecast(saved["matrix"], saved["offset"])
    except (OSError, ValueError, KeyError):
        pass
    if len(train_target) < window:
        raise ConfigError(f"the training split ({len(train_target)} steps) is shorter than the window ({window}); "
                          "use a shorter preprocessing.window or more data")
    operator = mstl_operator(fit_mstl_trend(train_target, periods), periods, window, horizon,
                             around=train_target[-window:], check_window=train_target[:window])
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{uuid.uuid4().hex}.npz")
        np.savez(partial, matrix=operator.matrix, offset=operator.offset)
        os.replace(partial, path)
    except OSError as error:
        log.warning("could not keep the MSTL map in %s (%s); the next run computes it again", path.parent, error)
    return operator
