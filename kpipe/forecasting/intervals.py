"""Prediction intervals by split conformal calibration (Vovk et al. 2005; Lei et al. 2018).

The model's absolute errors on the validation windows, step by step, give the half-width at each
horizon step: for level 1 - α over n windows, the ⌈(n + 1)(1 - α)⌉-th smallest error. Under
exchangeable errors the interval `forecast ± half-width` then covers the truth with probability at
least 1 - α. Errors of a series drift (validation and test are different weeks), so the coverage
is measured on the test split and reported, not assumed.
"""

from __future__ import annotations

import math

import numpy as np

LEVELS = (80, 95)  # percent: the intervals every forecaster export returns


def conformal_half_widths(truth: np.ndarray, forecast: np.ndarray, level: float) -> np.ndarray:
    """Half-widths (horizon,) from calibration forecasts and truth, both (windows, horizon)."""
    errors = np.sort(np.abs(np.asarray(truth, np.float64) - np.asarray(forecast, np.float64)), axis=0)
    n = len(errors)
    rank = math.ceil((n + 1) * level / 100)
    if rank > n:  # too few windows for this level: the interval is unbounded
        return np.full(errors.shape[1], np.inf)
    return errors[rank - 1]


def coverage(truth: np.ndarray, forecast: np.ndarray, half_width: np.ndarray) -> float:
    """The share of truth values inside `forecast ± half_width` (half_width broadcast over windows)."""
    return float(np.mean(np.abs(np.asarray(truth) - np.asarray(forecast)) <= half_width))
