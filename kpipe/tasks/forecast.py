"""Forecasting end to end: series -> windows -> RNN -> baselines side by side -> report -> SavedModel.

The export takes raw windows in original units, (batch, window, features), and returns the next
`horizon` values of the target in original units: the scaling lives inside the graph
(`tf.saved_model.load(path).serve(window=...)["forecast"]`).
"""

from __future__ import annotations

import dataclasses
import json
import logging
from pathlib import Path
from typing import Callable

import keras
import numpy as np
import pandas as pd
import tensorflow as tf

from kpipe import export, manifest, reporting
from kpipe.datasets import files
from kpipe.datasets.time_series import (TimeSeries, check_times, load_time_series,
                                        numeric_columns)
from kpipe.errors import ConfigError, DataError
from kpipe.forecasting import baselines
from kpipe.forecasting.metrics import forecast_errors, mase_scale
from kpipe.models.rnn_forecaster import build_rnn_forecaster, fit_linear_path
from kpipe.pipeline_config import PipelineConfig, RunResult
from kpipe.preprocessing.windows import (Scaler, WindowConfig, make_window_dataset, split_origins,
                                         window_arrays)
from kpipe.runs import Run

log = logging.getLogger(__name__)

FEATURES_FILE = "features.json"


# === Serving ===

class ForecasterServing(tf.Module):
    """Raw window (original units) -> forecast (original units): scaling, model, unscaling in one graph."""

    def __init__(self, model: keras.Model, scaler: Scaler, window: int, num_features: int):
        super().__init__()
        self.model = model
        self.mean = tf.constant(scaler.mean)
        self.scale = tf.constant(scaler.scale)
        self.serve = tf.function(self._serve, input_signature=[
            tf.TensorSpec([None, window, num_features], tf.float32, name="window")])

    def _serve(self, window: tf.Tensor) -> dict[str, tf.Tensor]:
        scaled = (window - self.mean) / self.scale
        forecast = self.model(scaled, training=False) * self.scale[0] + self.mean[0]
        return {"forecast": forecast}


def write_forecaster_export(path: Path, *, model: keras.Model, scaler: Scaler, config: PipelineConfig,
                            series: TimeSeries, metrics: dict, history: list[dict], work_dir: Path,
                            plots: dict[str, Callable[[Path], object]]) -> None:
    """Write the SavedModel and everything a user needs beside it into `path`."""
    windows: WindowConfig = config.preprocessing
    serving = ForecasterServing(model, scaler, windows.window, series.num_features)
    export.write_saved_model(path, tracked=[model], endpoints={"serve": serving.serve})
    export.write_run_files(path, model=model, config=config, metrics=metrics, history=history, work_dir=work_dir)
    frequency = pd.infer_freq(series.times) if series.times is not None and len(series.times) >= 3 else None
    reporting.write_json({
        "features": series.feature_names, "target": series.target_name, "window": windows.window,
        "horizon": windows.horizon, "time_column": config.data.time_column or ("time" if series.times is not None else ""),
        "frequency": frequency, "scaler_mean": scaler.mean.tolist(), "scaler_scale": scaler.scale.tolist(),
    }, path / FEATURES_FILE)
    for name, plot in plots.items():
        plot(path / name)


# === Running the pipeline ===

def _metrics_table(results: dict[str, dict]) -> str:
    lines = [f"{'forecaster':16s} {'MAE':>10s} {'RMSE':>10s} {'MASE':>7s} {'sMAPE %':>8s}"]
    for name, r in results.items():
        lines.append(f"{name:16s} {r['mae']:10.4g} {r['rmse']:10.4g} {r['mase']:7.3f} {r['smape']:8.3f}")
    return "\n".join(lines)


def _without_recurrent_path(model: keras.Model, inputs: np.ndarray) -> np.ndarray:
    head = model.get_layer("forecast")
    weights = head.get_weights()
    head.set_weights([np.zeros_like(w) for w in weights])
    try:
        return model.predict(inputs, batch_size=256, verbose=0)
    finally:
        head.set_weights(weights)


def run_forecast(config: PipelineConfig) -> RunResult:
    """Train, evaluate (against naive, seasonal naive and Holt-Winters) and export a forecaster."""
    with Run(config) as run:
        return _run_forecast(run, config)


def _run_forecast(run: Run, config: PipelineConfig) -> RunResult:
    series = load_time_series(config.data)
    windows: WindowConfig = config.preprocessing
    if windows.season_length >= series.train_end // 2:
        raise ConfigError(f"preprocessing.season_length={windows.season_length} needs two full seasons in the "
                          f"training split ({series.train_end} steps); use a shorter season or more data")
    scaler = Scaler.fit(series.values[:series.train_end])  # training rows only: no peeking ahead
    scaled = scaler.transform(series.values)
    origins = {split: split_origins(series, split, windows) for split in ("train", "validation", "test")}
    if origins["test"][0] < windows.season_length:
        raise ConfigError(f"the test split starts {origins['test'][0]} steps in, less than one season "
                          f"({windows.season_length}); the seasonal baselines need that much history")

    batch_size = run.global_batch
    train_ds = make_window_dataset(scaled, origins["train"], windows, batch_size=batch_size, shuffle=True,
                                   seed=config.training.seed, stride=windows.stride)
    val_ds = make_window_dataset(scaled, origins["validation"], windows, batch_size=batch_size)
    model_config = config.model.resolved(windows, series.num_features)


    def build() -> keras.Model:
        model = build_rnn_forecaster(model_config)
        if model_config.linear_steps:  # closed-form start for the linear path (BackupAndRestore overrides it)
            fit_linear_path(model, model_config, *window_arrays(scaled, origins["train"], windows))
        return model

    model, history = run.train(build, loss=model_config.loss, metrics=["mae"], train_data=train_ds,
                               validation_data=val_ds)

    # === Test: the model and every baseline on the same origins, in original units ===
    test = origins["test"]
    inputs, truth_scaled = window_arrays(scaled, test, windows)
    truth = scaler.inverse_target(truth_scaled)
    forecasts = {"model": scaler.inverse_target(model.predict(inputs, batch_size=256, verbose=0))}
    if model_config.add_baseline != "none" or model_config.linear_steps:
        # Ablation: the same model with its recurrent correction zeroed, so the report shows what the
        # RNN adds over the baseline/linear paths.
        forecasts["model_without_rnn"] = scaler.inverse_target(_without_recurrent_path(model, inputs))
    target = series.target.astype(np.float64)
    forecasts["naive"] = baselines.naive(target, test, windows.horizon)
    forecasts["seasonal_naive"] = baselines.seasonal_naive(target, test, windows.horizon, windows.season_length)
    forecasts["holt_winters"], hw_params = baselines.holt_winters(
        target, series.train_end, test, windows.horizon, windows.season_length)
    scale = mase_scale(target[:series.train_end], windows.season_length)
    results = {name: forecast_errors(truth, values, scale) for name, values in forecasts.items()}
    log.info("Test errors over %d windows (horizon %d, %s):\n%s", len(test), windows.horizon, series.target_name,
             _metrics_table(results))

    metrics = {
        **run.common_metrics(history),
        "data": {"source": config.data.describe(), "features": series.feature_names, **series.split_sizes(),
                 "test_windows": int(len(test))},
        "test": results,
        "model_vs_seasonal_naive_mae": results["model"]["mae"] / results["seasonal_naive"]["mae"],
        "model_vs_holt_winters_mae": results["model"]["mae"] / results["holt_winters"]["mae"],
        "holt_winters_params": hw_params,
        "mase_scale": scale,
    }

    def x_axis(index: np.ndarray):
        return series.times[index] if series.times is not None else index

    def plot_examples(path: Path) -> None:
        examples = []
        for position in (0, len(test) // 2, len(test) - 1):
            t = int(test[position])
            past = np.arange(max(0, t - min(windows.window, 3 * windows.horizon)), t)
            future = np.arange(t, t + windows.horizon)
            examples.append({"history_x": x_axis(past), "history": target[past], "future_x": x_axis(future),
                             "truth": truth[position], "title": f"test origin {x_axis(np.array([t]))[0]}",
                             "forecasts": {name: values[position] for name, values in forecasts.items()
                                           if name != "model_without_rnn"}})
        reporting.plot_forecasts(examples, path, title=f"{config.name}: {series.target_name}",
                                 ylabel=series.target_name)

    plots = {"forecast.png": plot_examples,
             "error_by_horizon.png": lambda path: reporting.plot_error_by_horizon(
                 {n: r["per_step"]["mae"] for n, r in results.items()}, path,
                 title=f"{config.name}: test MAE by horizon step", ylabel=f"MAE ({series.target_name})")}
    version_dir = run.publish(lambda folder: write_forecaster_export(
        folder, model=model, scaler=scaler, config=config, series=series, metrics=metrics, history=history,
        work_dir=run.work_dir, plots=plots), data=(series.values.tobytes(),))
    summary = (f"Test MAE {results['model']['mae']:.4g} ({series.target_name}): "
               f"{metrics['model_vs_seasonal_naive_mae']:.3f}x seasonal naive, "
               f"{metrics['model_vs_holt_winters_mae']:.3f}x Holt-Winters\n{_metrics_table(results)}\n"
               f"Exported to {version_dir} (report: metrics.json, forecast.png, error_by_horizon.png)\n"
               f"Try: kpipe forecast {version_dir} --input recent.csv")
    return RunResult(version_dir, metrics, summary)


# === Forecasting with an export ===

@dataclasses.dataclass(frozen=True)
class Forecast:
    """The next `horizon` values of the target after the given window."""

    target: str
    values: np.ndarray                 # (horizon,)
    times: pd.DatetimeIndex | None     # their timestamps, when the inputs had them


def load_forecaster(model: str | Path, export_dir: str | Path = "saved_models"):
    """Load an exported forecaster: (loaded SavedModel, its features.json as a dict)."""
    path = export.resolve_model_dir(model, export_dir)
    manifest.require(path, "forecast", "kpipe forecast")
    return tf.saved_model.load(str(path)), json.loads((path / FEATURES_FILE).read_text(encoding="utf-8"))


def forecast_table(model: str | Path, frame: pd.DataFrame, export_dir: str | Path = "saved_models",
                   source: str = "input") -> Forecast:
    """Forecast the next horizon after the last `window` rows of `frame`.

    `frame` needs the export's feature columns (target first; see its features.json), in time order,
    without missing values; with a time column, the forecast gets timestamps.

    Raises:
        DataError: missing columns, too few rows, missing values, unordered or duplicated times.
    """
    loaded, spec = load_forecaster(model, export_dir)
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
    output = loaded.serve(window=tf.constant(values.to_numpy(np.float32)[None]))["forecast"].numpy()[0]
    future = None
    if times is not None and spec.get("frequency"):
        offset = pd.tseries.frequencies.to_offset(spec["frequency"])
        future = pd.date_range(times[-1] + offset, periods=len(output), freq=offset)
    return Forecast(spec["target"], output, future)


def forecast_file(model: str | Path, path: str | Path, export_dir: str | Path = "saved_models") -> Forecast:
    """`forecast_table` on a CSV/TSV/Parquet file."""
    return forecast_table(model, files.read_table(path, missing_as_nan=True), export_dir, source=str(path))
