"""Forecast errors: MAE, RMSE, MASE, MAPE and sMAPE, overall and per horizon step.

    MAE   mean |y - ŷ|
    RMSE  sqrt(mean (y - ŷ)²)
    MASE  MAE / (in-sample MAE of the seasonal naive forecast on the training split), Hyndman &
          Koehler (2006): below 1 beats a one-season-back forecast made with hindsight on the train data
    MAPE  mean 100 |y - ŷ| / |y|, in percent, over the nonzero truths (as Taylor 2003 reports)
    sMAPE mean 200 |y - ŷ| / (|y| + |ŷ|), in percent (0 where both are 0)
"""

from __future__ import annotations

import numpy as np


def mase_scale(train_target: np.ndarray, season_length: int) -> float:
    """Mean absolute seasonal difference of the training series (the MASE denominator)."""
    m = season_length if len(train_target) > season_length else 1
    return float(np.mean(np.abs(train_target[m:] - train_target[:-m])))


def forecast_errors(truth: np.ndarray, forecast: np.ndarray, scale: float) -> dict:
    """Errors of (windows, horizon) forecasts: overall, and per horizon step (lists, step 1 first)."""
    error = forecast - truth
    denominator = np.abs(truth) + np.abs(forecast)
    smape = np.where(denominator > 0, 200.0 * np.abs(error) / np.where(denominator > 0, denominator, 1.0), 0.0)

    nonzero = truth != 0
    ape = np.where(nonzero, 100.0 * np.abs(error) / np.where(nonzero, np.abs(truth), 1.0), 0.0)

    def summarise(axis):
        mae = np.mean(np.abs(error), axis=axis)
        with np.errstate(invalid="ignore"):  # a step whose truths are all zero has no MAPE (NaN)
            mape = np.sum(ape, axis=axis) / np.sum(nonzero, axis=axis)
        return {"mae": mae, "rmse": np.sqrt(np.mean(error ** 2, axis=axis)), "mase": mae / scale,
                "mape": mape, "smape": np.mean(smape, axis=axis)}

    def number(x):  # JSON has no NaN
        return float(x) if np.isfinite(x) else None

    overall = {k: number(v) for k, v in summarise(None).items()}
    per_step = {k: [number(x) for x in v] for k, v in summarise(0).items()}
    return overall | {"per_step": per_step}
