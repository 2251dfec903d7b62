"""The stages of a forecast run that are not the training itself: statistical baselines, the recurrent
correction's ablation, the refit on training + validation, the report's plots and summary.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from pathlib import Path
from typing import Callable

import keras
import numpy as np

from kpipe.config.pipeline import PipelineConfig
from kpipe.datasets.time_series import TimeSeries
from kpipe.evaluation import reporting
from kpipe.families.rnn_forecaster.model import build_rnn_forecaster
from kpipe.forecasting import baselines
from kpipe.forecasting.intervals import LEVELS
from kpipe.preprocessing.configs import WindowConfig
from kpipe.preprocessing.windows import make_window_dataset
from kpipe.training.loop import kept_epoch
from kpipe.training.run import Run

log = logging.getLogger(__name__)


def metrics_table(results: dict[str, dict]) -> str:
    lines = [f"{'forecaster':20s} {'MAE':>10s} {'RMSE':>10s} {'MASE':>7s} {'MAPE %':>7s} {'sMAPE %':>8s}"]
    for name, r in results.items():
        mape = f"{r['mape']:7.3f}" if r["mape"] is not None else f"{'-':>7s}"
        lines.append(f"{name:20s} {r['mae']:10.4g} {r['rmse']:10.4g} {r['mase']:7.3f} {mape} {r['smape']:8.3f}")
    return "\n".join(lines)


# Components of the forecaster that can be switched off after training (their output layer zeroed),
# so the report shows what each adds: {report row: (layer, config flag that builds it)}.
ABLATIONS = {"model_without_rnn": ("forecast", None), "model_without_linear": ("linear_autoregression", "linear_steps")}


def ablated_forecasts(model: keras.Model, model_config, inputs: np.ndarray) -> dict[str, np.ndarray]:
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
        zero_layer(model, layer_name)
        try:
            rows[row] = model.predict(inputs, batch_size=256, verbose=0)
        finally:
            layer.set_weights(weights)
    return rows


def recurrent_correction_decision(model_config, val_mae: dict[str, float]) -> dict:
    """Whether the trained recurrent path stays: always, or (`recurrent_correction = "if_better"`) only if
    the model's validation MAE is below that of the model without it."""
    if model_config.recurrent_correction == "always" or "model_without_rnn" not in val_mae:
        return {"policy": model_config.recurrent_correction, "kept": True}
    return {"policy": "if_better", "kept": val_mae["model"] < val_mae["model_without_rnn"],
            "validation_mae_with": val_mae["model"], "validation_mae_without": val_mae["model_without_rnn"]}


def zero_layer(model: keras.Model, name: str) -> None:
    layer = model.get_layer(name)
    layer.set_weights([np.zeros_like(w) for w in layer.get_weights()])


def statistical_baselines(config: PipelineConfig, target: np.ndarray, fit_end: int,
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


def refit_on_validation(run: Run, config: PipelineConfig, model_config, scaled: np.ndarray, origins: dict[str, np.ndarray],
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


def report_plots(config: PipelineConfig, series: TimeSeries, test: np.ndarray, truth: np.ndarray,
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


def summary_text(metrics: dict, val_mae: dict, interval_coverage: dict, version_dir: Path, target_name: str) -> str:
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
               f"{metrics['model_vs_seasonal_naive_mae']:.3f}x seasonal naive\n{metrics_table(results)}\n"
               f"Validation MAE of the trained model {val_mae['model']:.4g}{components}\n"
               f"{refit_line}Prediction intervals on test: " + ", ".join(
                   f"{level} % covered {100 * interval_coverage[str(level)]:.1f} %" for level in LEVELS) + "\n"
               f"Exported to {version_dir} (report: metrics.json, forecast.png, error_by_horizon.png)\n"
               f"Try: kpipe forecast {version_dir} --input recent.csv")
