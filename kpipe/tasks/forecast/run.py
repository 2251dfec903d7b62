"""Forecasting end to end: series -> windows -> RNN -> baselines side by side -> report -> SavedModel.

`run_forecast` reads top to bottom as its stages: load the windows, train, decide on validation (the recurrent
correction, the interval widths), optionally refit on training + validation, test beside the statistical
baselines, publish. The stages that are not training live in `stages.py`; the export's signature in
`signatures.py`: raw windows in original units, (batch, window, features), in; the next `horizon` values of the
target in original units, with 80 % and 95 % conformal prediction intervals, out.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Callable

import keras
import numpy as np

from kpipe.config.pipeline import PipelineConfig, RunResult
from kpipe.datasets.time_series import TimeSeries, load_time_series
from kpipe.errors import ConfigError
from kpipe.evaluation.forecast_metrics import forecast_errors, mase_scale
from kpipe.families.rnn_forecaster.model import build_rnn_forecaster, fit_linear_path, set_mstl_baseline
from kpipe.forecasting.intervals import LEVELS, conformal_half_widths, coverage
from kpipe.forecasting.mstl_operator import fitted_mstl_operator
from kpipe.preprocessing.configs import WindowConfig
from kpipe.preprocessing.windows import Scaler, make_window_dataset, split_origins, window_arrays
from kpipe.tasks.forecast.signatures import write_forecaster_export
from kpipe.tasks.forecast.stages import (
    ablated_forecasts,
    metrics_table,
    recurrent_correction_decision,
    refit_on_validation,
    report_plots,
    statistical_baselines,
    summary_text,
    zero_layer,
)
from kpipe.training.run import Run

log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class Windows:
    """The series, its scaler (fitted on the training rows only), the scaled values and each split's origins."""

    series: TimeSeries
    scaler: Scaler
    scaled: np.ndarray
    origins: dict[str, np.ndarray]
    windows: WindowConfig  # the preprocessing config the origins were cut with

    def forecasts(self, model: keras.Model, model_config, split: str) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """(truth, {"model": ..., ablation rows...}) on a split's origins, in original units."""
        inputs, truth = window_arrays(self.scaled, self.origins[split], self.windows)
        rows = {"model": model.predict(inputs, batch_size=256, verbose=0),
                **ablated_forecasts(model, model_config, inputs)}
        return self.scaler.inverse_target(truth), {name: self.scaler.inverse_target(v) for name, v in rows.items()}


@dataclasses.dataclass(frozen=True)
class Validation:
    """What validation decided: each component's MAE, whether the recurrent correction stays, interval widths."""

    mae: dict[str, float]
    recurrent: dict
    half_widths: dict


@dataclasses.dataclass(frozen=True)
class TestResults:
    """The test split: truth and every forecaster's forecasts (original units), their errors, the baselines."""

    truth: np.ndarray
    forecasts: dict[str, np.ndarray]
    errors: dict[str, dict]
    baselines: list[str]
    baseline_info: dict
    mase_scale: float


def run_forecast(config: PipelineConfig) -> RunResult:
    """Train, evaluate (against naive, seasonal naive, MSTL and AutoETS) and export a forecaster."""
    with Run(config) as run:
        return _run_forecast(run, config)


def _run_forecast(run: Run, config: PipelineConfig) -> RunResult:
    data = load_windows(config)
    model_config = config.model.resolved(config.preprocessing, data.series.num_features)
    initialise = initialiser(config, data, model_config)
    model, history = train(run, config, data, model_config, initialise)
    validation = validate(model, data, model_config)
    model, refit = refit_if_asked(run, config, data, model_config, model, history, validation, initialise)
    tested = score_test_split(config, data, model, model_config)
    metrics = collect_metrics(run, config, data, history, validation, refit, tested)
    plots = report_plots(config, data.series, data.origins["test"], tested.truth, tested.forecasts,
                         validation.half_widths, tested.errors)
    version_dir = run.publish(lambda folder: write_forecaster_export(
        folder, model=model, scaler=data.scaler, config=config, series=data.series, metrics=metrics,
        history=history, work_dir=run.work_dir, half_widths=validation.half_widths, plots=plots),
        data=(data.series.values.tobytes(),))
    summary = summary_text(metrics, validation.mae, metrics["intervals"]["test_coverage"], version_dir,
                           data.series.target_name)
    return RunResult(version_dir, metrics, summary)


# === Stages ===

def load_windows(config: PipelineConfig) -> Windows:
    """The series and its windows; a series too short for the seasons asked for stops here."""
    series = load_time_series(config.data)
    windows: WindowConfig = config.preprocessing
    if windows.season_length >= series.train_end // 2:
        raise ConfigError(f"preprocessing.season_length={windows.season_length} needs two full seasons in the "
                          f"training split ({series.train_end} steps); use a shorter season or more data")
    scaler = Scaler.fit(series.values[:series.train_end])  # training rows only: no peeking ahead
    origins = {split: split_origins(series, split, windows) for split in ("train", "validation", "test")}
    if origins["test"][0] < windows.season_length:
        raise ConfigError(f"the test split starts {origins['test'][0]} steps in, less than one season "
                          f"({windows.season_length}); the seasonal baselines need that much history")
    return Windows(series, scaler, scaler.transform(series.values), origins, windows)


def initialiser(config: PipelineConfig, data: Windows, model_config) -> Callable[[keras.Model, np.ndarray], None]:
    """Sets a new model's fixed parts: the MSTL baseline, then the linear path's closed-form fit on the windows
    at the origins given (a resumed run restores both from its checkpoint anyway)."""
    windows, series = config.preprocessing, data.series
    mstl = None
    if model_config.add_baseline == "mstl":  # MSTL over every season, fitted on the training split, in model units
        mstl = fitted_mstl_operator(series.target[:series.train_end], windows.seasons, windows.window,
                                    windows.horizon).in_scaled_units(float(data.scaler.mean[0]),
                                                                     float(data.scaler.scale[0]))

    def initialise(model: keras.Model, fit_origins: np.ndarray) -> None:
        if mstl is not None:
            set_mstl_baseline(model, mstl)
        if model_config.linear_steps:
            fit_linear_path(model, model_config, *window_arrays(data.scaled, fit_origins, windows))
    return initialise


def train(run: Run, config: PipelineConfig, data: Windows, model_config, initialise) -> tuple[keras.Model, list]:
    windows: WindowConfig = config.preprocessing
    train_ds = make_window_dataset(data.scaled, data.origins["train"], windows, batch_size=run.global_batch,
                                   shuffle=True, seed=config.training.seed, stride=windows.stride)
    val_ds = make_window_dataset(data.scaled, data.origins["validation"], windows, batch_size=run.global_batch)

    def build() -> keras.Model:
        model = build_rnn_forecaster(model_config)
        initialise(model, data.origins["train"])
        return model
    return run.train(build, loss=model_config.loss, metrics=["mae"], train_data=train_ds, validation_data=val_ds)


def validate(model: keras.Model, data: Windows, model_config) -> Validation:
    """What each component is worth on validation, and the interval widths (split conformal)."""
    truth, forecasts = data.forecasts(model, model_config, "validation")
    mae = {name: float(np.mean(np.abs(values - truth))) for name, values in forecasts.items()}
    recurrent = recurrent_correction_decision(model_config, mae)
    kept = "model" if recurrent["kept"] else "model_without_rnn"
    return Validation(mae, recurrent, {level: conformal_half_widths(truth, forecasts[kept], level)
                                       for level in LEVELS})


def refit_if_asked(run: Run, config: PipelineConfig, data: Windows, model_config, model: keras.Model,
                   history: list, validation: Validation, initialise) -> tuple[keras.Model, dict | None]:
    """Optionally train again on training + validation windows, for the epochs validation chose; without the
    recurrent correction, the model without it is what gets tested and exported."""
    refit = None
    if config.training.refit_with_validation and not validation.recurrent["kept"] and not model_config.linear_steps:
        log.info("Refit skipped: the recurrent correction is switched off and nothing else was trained")
    elif config.training.refit_with_validation:
        model, refit = refit_on_validation(run, config, model_config, data.scaled, data.origins, history,
                                           initialise)
    if not validation.recurrent["kept"]:
        zero_layer(model, "forecast")
    return model, refit


def score_test_split(config: PipelineConfig, data: Windows, model: keras.Model, model_config) -> TestResults:
    """The model, its ablations and every baseline on the same test origins, in original units."""
    series, windows, origins = data.series, config.preprocessing, data.origins["test"]
    truth, forecasts = data.forecasts(model, model_config, "test")
    target = series.target.astype(np.float64)
    baseline_forecasts, baseline_info = statistical_baselines(config, target, series.validation_end, origins)
    forecasts |= baseline_forecasts
    scale = mase_scale(target[:series.train_end], windows.season_length)
    results = {name: forecast_errors(truth, values, scale) for name, values in forecasts.items()}
    log.info("Test errors over %d windows (horizon %d, %s):\n%s", len(origins), windows.horizon, series.target_name,
             metrics_table(results))
    return TestResults(truth, forecasts, results, list(baseline_forecasts), baseline_info, scale)


def collect_metrics(run: Run, config: PipelineConfig, data: Windows, history: list, validation: Validation,
                    refit: dict | None, tested: TestResults) -> dict:
    results = tested.errors
    best_baseline = min(tested.baselines, key=lambda name: results[name]["mae"])
    half_widths = validation.half_widths
    return {
        **run.common_metrics(history),
        "data": {"source": config.data.describe(), "features": data.series.feature_names,
                 **data.series.split_sizes(), "test_windows": int(len(data.origins["test"]))},
        "test": results,
        "best_baseline": best_baseline,
        "model_vs_best_baseline_mae": results["model"]["mae"] / results[best_baseline]["mae"],
        "model_vs_seasonal_naive_mae": results["model"]["mae"] / results["seasonal_naive"]["mae"],
        "validation_mae": validation.mae,
        "recurrent_correction": validation.recurrent,
        "refit_with_validation": refit,
        "intervals": {"method": "split conformal on the validation windows, per horizon step",
                      "test_coverage": {str(level): coverage(tested.truth, tested.forecasts["model"], width)
                                        for level, width in half_widths.items()},
                      "mean_half_width": {str(level): float(np.mean(w)) for level, w in half_widths.items()}},
        "baselines": tested.baseline_info,
        "mase_scale": tested.mase_scale,
    }
