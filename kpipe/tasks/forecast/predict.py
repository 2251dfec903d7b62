"""Forecasting with an exported model: a table of recent rows in, forecasts with intervals out. Imports no
training code.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pandas as pd

from kpipe.datasets import files
from kpipe.datasets.time_series import check_times, numeric_columns
from kpipe.errors import DataError
from kpipe.portable.export_files import FEATURES_FILE
from kpipe.exports.open import open_export
from kpipe.forecasting.intervals import LEVELS
from kpipe.portable.runtime import PortableForecaster, is_portable


@dataclasses.dataclass(frozen=True)
class Forecast:
    """The next `horizon` values of the target after the given window."""

    target: str
    values: np.ndarray                 # (horizon,)
    times: pd.DatetimeIndex | None     # their timestamps, when the inputs had them
    intervals: dict[int, tuple[np.ndarray, np.ndarray]] = dataclasses.field(default_factory=dict)


def load_forecaster(model: str | Path, export_dir: str | Path = "saved_models"):
    """Load an exported forecaster: (a `serve(window)` function -> outputs as NumPy arrays, its features.json as a
    dict). A portable export (ONNX, LiteRT) is answered without TensorFlow."""
    if is_portable(model):
        forecaster = PortableForecaster.open(model)
        return forecaster.serve, forecaster.spec
    opened = open_export(model, task="forecast", command="kpipe forecast", export_dir=export_dir)
    import tensorflow as tf

    def serve(window: np.ndarray) -> dict[str, np.ndarray]:
        return {k: v.numpy() for k, v in opened.loaded.serve(window=tf.constant(window)).items()}
    return serve, json.loads((opened.path / FEATURES_FILE).read_text(encoding="utf-8"))


def forecast_table(model: str | Path, frame: pd.DataFrame, export_dir: str | Path = "saved_models",
                   source: str = "input") -> Forecast:
    """Forecast the next horizon after the last `window` rows of `frame`.

    `frame` needs the export's feature columns (target first; see its features.json), in time order,
    without missing values; with a time column, the forecast gets timestamps.

    Raises:
        DataError: missing columns, too few rows, missing values, unordered or duplicated times.
    """
    serve, spec = load_forecaster(model, export_dir)
    features, window = spec["features"], spec["window"]
    missing = [c for c in features if c not in frame.columns]
    if missing:
        raise DataError(f"{source} lacks the column(s) {', '.join(missing)}; this model needs {len(features)} "
                        f"feature column(s): {', '.join(features)}")
    if len(frame) < window:
        raise DataError(f"{source} has {len(frame)} rows but this model needs a window of {window} rows "
                        f"(the most recent {window} values of {', '.join(features)})")
    recent = frame.iloc[-window:]
    values = numeric_columns(recent, features, source)
    if values.isna().any().any():
        column = values.columns[values.isna().any()][0]
        raise DataError(f"{source} has missing values in '{column}' within the last {window} rows; fill them first")
    times = None
    time_column = spec.get("time_column") or ""
    if time_column and time_column in frame.columns:
        times = check_times(frame[time_column], time_column, source)
    served = serve(values.to_numpy(np.float32)[None])
    output = served["forecast"][0]
    intervals = {level: (served[f"lower_{level}"][0], served[f"upper_{level}"][0])
                 for level in LEVELS if f"lower_{level}" in served}  # exports from before intervals have none
    future = None
    if times is not None and spec.get("frequency"):
        offset = pd.tseries.frequencies.to_offset(spec["frequency"])
        future = pd.date_range(times[-1] + offset, periods=len(output), freq=offset)
    return Forecast(spec["target"], output, future, intervals)


def forecast_file(model: str | Path, path: str | Path, export_dir: str | Path = "saved_models") -> Forecast:
    """`forecast_table` on a CSV/TSV/Parquet file."""
    return forecast_table(model, files.read_table(path, missing_as_nan=True), export_dir, source=str(path))
