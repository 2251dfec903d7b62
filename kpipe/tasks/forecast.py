"""Forecasting end to end: series -> windows -> RNN -> baselines side by side -> report -> SavedModel.

The export takes raw windows in original units, (batch, window, features), and returns the next
`horizon` values of the target in original units, with 80 % and 95 % prediction intervals
(conformal, calibrated on the validation split): the scaling lives inside the graph
(`tf.saved_model.load(path).serve(window=...)` -> "forecast", "lower_80", "upper_80", "lower_95", "upper_95").
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from pathlib import Path
from typing import Callable

import keras
import numpy as np
import pandas as pd
import tensorflow as tf

from kpipe.exports import run_files, saved_model
from kpipe.exports.open import open_export

from kpipe.evaluation import reporting
from kpipe.datasets import files
from kpipe.datasets.time_series import (TimeSeries, check_times, load_time_series,
                                        numeric_columns)
from kpipe.errors import ConfigError, DataError
from kpipe.forecasting import baselines
from kpipe.forecasting.intervals import LEVELS, conformal_half_widths, coverage
from kpipe.evaluation.forecast_metrics import forecast_errors, mase_scale
from kpipe.forecasting.mstl_operator import fitted_mstl_operator
from kpipe.models.rnn_forecaster import build_rnn_forecaster, fit_linear_path, set_mstl_baseline
from kpipe.config.pipeline import PipelineConfig, RunResult
from kpipe.preprocessing.windows import (Scaler, WindowConfig, make_window_dataset, split_origins,
                                         window_arrays)
from kpipe.training.run import Run
from kpipe.training.loop import kept_epoch

log = logging.getLogger(__name__)

FEATURES_FILE = "features.json"


# === Serving ===

class ForecasterServing(tf.Module):
    """Raw window (original units) -> forecast and prediction intervals (original units), in one graph."""

    def __init__(self, model: keras.Model, scaler: Scaler, window: int, num_features: int,
                 half_widths: dict[int, np.ndarray]):
        super().__init__()
        self.model = model
        self.mean = tf.constant(scaler.mean)
        self.scale = tf.constant(scaler.scale)
        self.half_widths = {level: tf.constant(width, tf.float32) for level, width in half_widths.items()}
        self.serve = tf.function(self._serve, input_signature=[
            tf.TensorSpec([None, window, num_features], tf.float32, name="window")])

    def _serve(self, window: tf.Tensor) -> dict[str, tf.Tensor]:
        scaled = (window - self.mean) / self.scale
        forecast = self.model(scaled, training=False) * self.scale[0] + self.mean[0]
        outputs = {"forecast": forecast}
        for level, width in self.half_widths.items():
            outputs[f"lower_{level}"], outputs[f"upper_{level}"] = forecast - width, forecast + width
        return outputs


def write_forecaster_export(path: Path, *, model: keras.Model, scaler: Scaler, config: PipelineConfig,
                            series: TimeSeries, metrics: dict, history: list[dict], work_dir: Path,
                            half_widths: dict[int, np.ndarray], plots: dict[str, Callable[[Path], object]]) -> None:
    """Write the SavedModel and everything a user needs beside it into `path`."""
    windows: WindowConfig = config.preprocessing
    serving = ForecasterServing(model, scaler, windows.window, series.num_features, half_widths)
    saved_model.write_saved_model(path, tracked=[model], endpoints={"serve": serving.serve})
    run_files.write_run_files(path, model=model, config=config, metrics=metrics, history=history, work_dir=work_dir)
    frequency = pd.infer_freq(series.times) if series.times is not None and len(series.times) >= 3 else None
    reporting.write_json({
        "features": series.feature_names, "target": series.target_name, "window": windows.window,
        "horizon": windows.horizon, "time_column": config.data.time_column or ("time" if series.times is not None else ""),
        "frequency": frequency, "scaler_mean": scaler.mean.tolist(), "scaler_scale": scaler.scale.tolist(),
        "interval_half_widths": {str(level): width.tolist() for level, width in half_widths.items()},
    }, path / FEATURES_FILE)
    for name, plot in plots.items():
        plot(path / name)


# === Running the pipeline ===

def _metrics_table(results: dict[str, dict]) -> str:
    lines = [f"{'forecaster':20s} {'MAE':>10s} {'RMSE':>10s} {'MASE':>7s} {'MAPE %':>7s} {'sMAPE %':>8s}"]
    for name, r in results.items():
        mape = f"{r['mape']:7.3f}" if r["mape"] is not None else f"{'-':>7s}"
        lines.append(f"{name:20s} {r['mae']:10.4g} {r['rmse']:10.4g} {r['mase']:7.3f} {mape} {r['smape']:8.3f}")
    return "\n".join(lines)


# Components of the forecaster that can be switched off after training (their output layer zeroed),
# so the report shows what each adds: {report row: (layer, config flag that builds it)}.
ABLATIONS = {"model_without_rnn": ("forecast", None), "model_without_linear": ("linear_autoregression", "linear_steps")}


def _ablated_forecasts(model: keras.Model, model_config, inputs: np.ndarray) -> dict[str, np.ndarray]:
    """Scaled forecasts of the model with each removable component zeroed, one at a time.

    The recurrent path is removable when something else carries the forecast (a baseline skip or the
    linear path); the linear path when the config has one."""
    rows = {}
    residual = model_config.add_baseline != "none" or model_config.linear_steps
    for row, (layer_name, flag) in ABLATIONS.items():
        if (flag is None and not residual) or (flag is not None and not getattr(model_config, flag)):
            continue
        layer = model.get_layer(layer_name)
        weights = layer.get_weights()
        _zero_layer(model, layer_name)
        try:
            rows[row] = model.predict(inputs, batch_size=256, verbose=0)
        finally:
            layer.set_weights(weights)
    return rows


def _recurrent_correction_decision(model_config, val_mae: dict[str, float]) -> dict:
    """Whether the trained recurrent path stays: always, or (`recurrent_correction = "if_better"`) only if
    the model's validation MAE is below that of the model without it."""
    if model_config.recurrent_correction == "always" or "model_without_rnn" not in val_mae:
        return {"policy": model_config.recurrent_correction, "kept": True}
    return {"policy": "if_better", "kept": val_mae["model"] < val_mae["model_without_rnn"],
            "validation_mae_with": val_mae["model"], "validation_mae_without": val_mae["model_without_rnn"]}


def _zero_layer(model: keras.Model, name: str) -> None:
    layer = model.get_layer(name)
    layer.set_weights([np.zeros_like(w) for w in layer.get_weights()])


def _statistical_baselines(config: PipelineConfig, target: np.ndarray, fit_end: int,
                           origins: np.ndarray) -> tuple[dict[str, np.ndarray], dict]:
    """What a user would try instead, from each origin: naive, seasonal naive, and (unless
    `evaluation.baseline = false`) MSTL over every season and AutoETS, fitted on the data before the
    first origin (train + validation: the statistical models need no validation split)."""
    windows: WindowConfig = config.preprocessing
    forecasts = {"naive": baselines.naive(target, origins, windows.horizon),
                 "seasonal_naive": baselines.seasonal_naive(target, origins, windows.horizon, windows.season_length)}
    info: dict = {}
    if config.evaluation.baseline:
        statistical = {"mstl": lambda: baselines.mstl(target, fit_end, origins, windows.horizon, windows.seasons),
                       "auto_ets": lambda: baselines.auto_ets(target, fit_end, origins, windows.horizon,
                                                              windows.season_length)}
        for name, forecaster in statistical.items():
            started = time.perf_counter()
            forecasts[name], info[name] = forecaster()
            info[name]["seconds"] = round(time.perf_counter() - started, 2)  # fit + every origin's forecast
    return forecasts, info


def _refit(run: Run, config: PipelineConfig, model_config, scaled: np.ndarray, origins: dict[str, np.ndarray],
           history: list[dict], initialise: Callable[[keras.Model, np.ndarray], None]) -> tuple[keras.Model, dict]:
    """A fresh model trained on every window whose targets lie in training + validation, for the
    number of epochs the validation split chose (resumable in the run's `refit` folder)."""
    windows: WindowConfig = config.preprocessing
    epochs = kept_epoch(history, config.training)
    both = np.arange(origins["train"][0], origins["validation"][-1] + 1)
    data = make_window_dataset(scaled, both, windows, batch_size=run.global_batch, shuffle=True,
                               seed=config.training.seed, stride=windows.stride)

    def build() -> keras.Model:
        model = build_rnn_forecaster(model_config)
        initialise(model, both)
        return model

    log.info("Refit on training + validation: %d windows, %d epoch(s) (the best on validation)", len(both), epochs)
    model, refit_history = run.train(
        build, subdir="refit", config=dataclasses.replace(config.training, epochs=epochs, early_stopping_patience=0),
        loss=model_config.loss, metrics=["mae"], train_data=data, validation_data=None)
    return model, {"epochs": epochs, "windows": int(len(both)), "history": refit_history}


def run_forecast(config: PipelineConfig) -> RunResult:
    """Train, evaluate (against naive, seasonal naive, MSTL and AutoETS) and export a forecaster."""
    with Run(config) as run:
        return _run_forecast(run, config)


def _load_windows(config: PipelineConfig):
    """The series, its scaler (fitted on the training rows only: no peeking ahead), the scaled values and each
    split's window origins; a series too short for the seasons asked for stops here."""
    series = load_time_series(config.data)
    windows: WindowConfig = config.preprocessing
    if windows.season_length >= series.train_end // 2:
        raise ConfigError(f"preprocessing.season_length={windows.season_length} needs two full seasons in the "
                          f"training split ({series.train_end} steps); use a shorter season or more data")
    scaler = Scaler.fit(series.values[:series.train_end])
    origins = {split: split_origins(series, split, windows) for split in ("train", "validation", "test")}
    if origins["test"][0] < windows.season_length:
        raise ConfigError(f"the test split starts {origins['test'][0]} steps in, less than one season "
                          f"({windows.season_length}); the seasonal baselines need that much history")
    return series, scaler, scaler.transform(series.values), origins


def _run_forecast(run: Run, config: PipelineConfig) -> RunResult:
    series, scaler, scaled, origins = _load_windows(config)
    windows: WindowConfig = config.preprocessing
    batch_size = run.global_batch
    train_ds = make_window_dataset(scaled, origins["train"], windows, batch_size=batch_size, shuffle=True,
                                   seed=config.training.seed, stride=windows.stride)
    val_ds = make_window_dataset(scaled, origins["validation"], windows, batch_size=batch_size)
    model_config = config.model.resolved(windows, series.num_features)
    mstl = None
    if model_config.add_baseline == "mstl":  # MSTL over every season, fitted on the training split, in model units
        mstl = fitted_mstl_operator(series.target[:series.train_end], windows.seasons, windows.window,
                                    windows.horizon).in_scaled_units(float(scaler.mean[0]), float(scaler.scale[0]))

    def initialise(model: keras.Model, fit_origins: np.ndarray) -> None:
        """The fixed parts: the MSTL baseline, then the linear path's closed-form fit on the windows at
        `fit_origins` (a resumed run restores both from its checkpoint anyway)."""
        if mstl is not None:
            set_mstl_baseline(model, mstl)
        if model_config.linear_steps:
            fit_linear_path(model, model_config, *window_arrays(scaled, fit_origins, windows))

    def build() -> keras.Model:
        model = build_rnn_forecaster(model_config)
        initialise(model, origins["train"])
        return model

    model, history = run.train(build, loss=model_config.loss, metrics=["mae"], train_data=train_ds,
                               validation_data=val_ds)

    def model_forecasts(split: str) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """(truth, {"model": ..., ablation rows...}) on a split's origins, in original units."""
        inputs, truth = window_arrays(scaled, origins[split], windows)
        rows = {"model": model.predict(inputs, batch_size=256, verbose=0),
                **_ablated_forecasts(model, model_config, inputs)}
        return scaler.inverse_target(truth), {name: scaler.inverse_target(v) for name, v in rows.items()}

    # === Validation: what each component is worth, and the interval widths (split conformal) ===
    val_truth, val_forecasts = model_forecasts("validation")
    val_mae = {name: float(np.mean(np.abs(values - val_truth))) for name, values in val_forecasts.items()}
    recurrent = _recurrent_correction_decision(model_config, val_mae)
    kept = "model" if recurrent["kept"] else "model_without_rnn"
    half_widths = {level: conformal_half_widths(val_truth, val_forecasts[kept], level) for level in LEVELS}

    # === Optionally train again on training + validation windows, for the epochs validation chose ===
    refit = None
    if config.training.refit_with_validation and not recurrent["kept"] and not model_config.linear_steps:
        log.info("Refit skipped: the recurrent correction is switched off and nothing else was trained")
    elif config.training.refit_with_validation:
        model, refit = _refit(run, config, model_config, scaled, origins, history, initialise)
    if not recurrent["kept"]:  # the model without it is what gets tested and exported
        _zero_layer(model, "forecast")

    # === Test: the model, its ablations and every baseline on the same origins, in original units ===
    test = origins["test"]
    truth, forecasts = model_forecasts("test")
    target = series.target.astype(np.float64)
    baseline_forecasts, baseline_info = _statistical_baselines(config, target, series.validation_end, test)
    forecasts |= baseline_forecasts
    scale = mase_scale(target[:series.train_end], windows.season_length)
    results = {name: forecast_errors(truth, values, scale) for name, values in forecasts.items()}
    best_baseline = min(baseline_forecasts, key=lambda name: results[name]["mae"])
    interval_coverage = {str(level): coverage(truth, forecasts["model"], width) for level, width in half_widths.items()}
    log.info("Test errors over %d windows (horizon %d, %s):\n%s", len(test), windows.horizon, series.target_name,
             _metrics_table(results))

    metrics = {
        **run.common_metrics(history),
        "data": {"source": config.data.describe(), "features": series.feature_names, **series.split_sizes(),
                 "test_windows": int(len(test))},
        "test": results,
        "best_baseline": best_baseline,
        "model_vs_best_baseline_mae": results["model"]["mae"] / results[best_baseline]["mae"],
        "model_vs_seasonal_naive_mae": results["model"]["mae"] / results["seasonal_naive"]["mae"],
        "validation_mae": val_mae,
        "recurrent_correction": recurrent,
        "refit_with_validation": refit,
        "intervals": {"method": "split conformal on the validation windows, per horizon step",
                      "test_coverage": interval_coverage,
                      "mean_half_width": {str(level): float(np.mean(w)) for level, w in half_widths.items()}},
        "baselines": baseline_info,
        "mase_scale": scale,
    }

    plots = _report_plots(config, series, test, truth, forecasts, half_widths, results)
    version_dir = run.publish(lambda folder: write_forecaster_export(
        folder, model=model, scaler=scaler, config=config, series=series, metrics=metrics, history=history,
        work_dir=run.work_dir, half_widths=half_widths, plots=plots), data=(series.values.tobytes(),))
    summary = _summary(metrics, val_mae, interval_coverage, version_dir, series.target_name)
    return RunResult(version_dir, metrics, summary)


def _report_plots(config: PipelineConfig, series: TimeSeries, test: np.ndarray, truth: np.ndarray,
                  forecasts: dict[str, np.ndarray], half_widths: dict,
                  results: dict) -> dict[str, Callable[[Path], object]]:
    """The report's plots, by file name: three test forecasts with their intervals, and MAE by horizon step."""
    windows: WindowConfig = config.preprocessing
    target = series.target.astype(np.float64)

    def x_axis(index: np.ndarray):
        return series.times[index] if series.times is not None else index

    def plot_examples(path: Path) -> None:
        examples = []
        for position in (0, len(test) // 2, len(test) - 1):
            t = int(test[position])
            past = np.arange(max(0, t - min(windows.window, 3 * windows.horizon)), t)
            future = np.arange(t, t + windows.horizon)
            model_forecast = forecasts["model"][position]
            examples.append({"history_x": x_axis(past), "history": target[past], "future_x": x_axis(future),
                             "truth": truth[position], "title": f"test origin {x_axis(np.array([t]))[0]}",
                             "forecasts": {name: values[position] for name, values in forecasts.items()
                                           if not name.startswith("model_without")},
                             "intervals": {f"model {level} %": (model_forecast - width, model_forecast + width)
                                           for level, width in sorted(half_widths.items(), reverse=True)}})
        reporting.plot_forecasts(examples, path, title=f"{config.name}: {series.target_name}",
                                 ylabel=series.target_name)

    return {"forecast.png": plot_examples,
            "error_by_horizon.png": lambda path: reporting.plot_error_by_horizon(
                {n: r["per_step"]["mae"] for n, r in results.items()}, path,
                title=f"{config.name}: test MAE by horizon step", ylabel=f"MAE ({series.target_name})")}


def _summary(metrics: dict, val_mae: dict, interval_coverage: dict, version_dir: Path, target_name: str) -> str:
    """What the run prints at the end: test MAE against the baselines, what validation said, the intervals."""
    results, refit, recurrent = metrics["test"], metrics["refit_with_validation"], metrics["recurrent_correction"]
    best_baseline = metrics["best_baseline"]
    refit_line = f"Tested: a model refit on training + validation for {refit['epochs']} epoch(s)\n" if refit else ""
    components = "".join(f", {row.removeprefix('model_')} {val_mae[row] / val_mae['model']:.3f}x"
                         for row in val_mae if row != "model")
    if components:
        components += " (ablations: a component is worth what its removal costs)"
    if not recurrent["kept"]:
        components += (f"\nThe recurrent correction did not lower validation MAE ({val_mae['model']:.4g} with it, "
                       f"{val_mae['model_without_rnn']:.4g} without): switched off in the tested and exported "
                       "model (model.recurrent_correction = \"if_better\")")
    return (f"Test MAE {results['model']['mae']:.4g} ({target_name}): "
               f"{metrics['model_vs_best_baseline_mae']:.3f}x the best baseline ({best_baseline}), "
               f"{metrics['model_vs_seasonal_naive_mae']:.3f}x seasonal naive\n{_metrics_table(results)}\n"
               f"Validation MAE of the trained model {val_mae['model']:.4g}{components}\n"
               f"{refit_line}Prediction intervals on test: " + ", ".join(
                   f"{level} % covered {100 * interval_coverage[str(level)]:.1f} %" for level in LEVELS) + "\n"
               f"Exported to {version_dir} (report: metrics.json, forecast.png, error_by_horizon.png)\n"
               f"Try: kpipe forecast {version_dir} --input recent.csv")


# === Forecasting with an export ===

@dataclasses.dataclass(frozen=True)
class Forecast:
    """The next `horizon` values of the target after the given window."""

    target: str
    values: np.ndarray                 # (horizon,)
    times: pd.DatetimeIndex | None     # their timestamps, when the inputs had them
    intervals: dict[int, tuple[np.ndarray, np.ndarray]] = dataclasses.field(default_factory=dict)
    # {level in percent: (lower, upper)}, each (horizon,): conformal intervals from the export


def load_forecaster(model: str | Path, export_dir: str | Path = "saved_models"):
    """Load an exported forecaster: (loaded SavedModel, its features.json as a dict)."""
    opened = open_export(model, task="forecast", command="kpipe forecast", export_dir=export_dir)
    return opened.loaded, json.loads((opened.path / FEATURES_FILE).read_text(encoding="utf-8"))


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
    served = loaded.serve(window=tf.constant(values.to_numpy(np.float32)[None]))
    output = served["forecast"].numpy()[0]
    intervals = {level: (served[f"lower_{level}"].numpy()[0], served[f"upper_{level}"].numpy()[0])
                 for level in LEVELS if f"lower_{level}" in served}  # exports from before intervals have none
    future = None
    if times is not None and spec.get("frequency"):
        offset = pd.tseries.frequencies.to_offset(spec["frequency"])
        future = pd.date_range(times[-1] + offset, periods=len(output), freq=offset)
    return Forecast(spec["target"], output, future, intervals)


def forecast_file(model: str | Path, path: str | Path, export_dir: str | Path = "saved_models") -> Forecast:
    """`forecast_table` on a CSV/TSV/Parquet file."""
    return forecast_table(model, files.read_table(path, missing_as_nan=True), export_dir, source=str(path))
