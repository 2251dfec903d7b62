"""electricity-seasonal-ar on the real taylor series, small and quick: report, export, plain-TF reload, CLI."""

import json
import logging

import numpy as np
import pandas as pd
import pytest
import tensorflow as tf

from kpipe.cli.commands import main
from kpipe.tasks.named_pipelines import load_pipeline
from kpipe.tasks.runner import run_pipeline
from tests.e2e.task_harness import FORECAST_QUICK
from tests.helpers import kpipe
from tests.servers import served_in_thread

pytestmark = pytest.mark.slow

QUICK = FORECAST_QUICK  # the task harness's settings: its run is this file's fixture


@pytest.fixture(scope="module")
def exported(task_run):
    run = task_run("forecast")  # the task harness's run (tests/e2e/task_harness.py), with QUICK's settings
    assert "x the best baseline" in run.printed and "mstl" in run.printed and "covered" in run.printed
    return run.folder, run.export


def test_report_has_every_forecaster_and_the_plots(exported):
    _, export = exported
    metrics = json.loads((export / "metrics.json").read_text())
    assert set(metrics["test"]) == {"model", "model_without_rnn", "model_without_linear", "naive", "seasonal_naive",
                                    "mstl", "auto_ets"}
    for result in metrics["test"].values():
        assert {"mae", "rmse", "mase", "mape", "smape"} <= set(result) and len(result["per_step"]["mape"]) == 12
    best = min(["naive", "seasonal_naive", "mstl", "auto_ets"], key=lambda name: metrics["test"][name]["mae"])
    assert metrics["best_baseline"] == best
    assert metrics["model_vs_best_baseline_mae"] == pytest.approx(
        metrics["test"]["model"]["mae"] / metrics["test"][best]["mae"])
    assert set(metrics["validation_mae"]) == {"model", "model_without_rnn", "model_without_linear"}
    coverage = metrics["intervals"]["test_coverage"]
    assert 0.5 < coverage["80"] <= coverage["95"] <= 1.0
    assert metrics["data"]["test_windows"] == 202 - 12 + 1  # the last 5 % of 4,032 half-hours, an origin each
    assert metrics["model_vs_seasonal_naive_mae"] == pytest.approx(
        metrics["test"]["model"]["mae"] / metrics["test"]["seasonal_naive"]["mae"])
    for name in ("forecast.png", "error_by_horizon.png", "training_curves.png", "features.json", "model.keras"):
        assert (export / name).is_file()


def test_savedmodel_takes_raw_units_and_matches_the_keras_model(exported):
    import keras

    import kpipe.families.rnn_forecaster.model  # noqa: F401  (registers TargetSlice for model.keras)
    _, export = exported
    spec = json.loads((export / "features.json").read_text())
    from pmdarima.datasets import load_taylor

    window = load_taylor()[-96:].astype("float32").reshape(1, 96, 1)
    loaded = tf.saved_model.load(str(export))  # keep a reference: its variables die with it
    served = loaded.serve(window=tf.constant(window))["forecast"].numpy()
    mean, scale = np.array(spec["scaler_mean"]), np.array(spec["scaler_scale"])
    keras_model = keras.saving.load_model(export / "model.keras")
    by_hand = keras_model((window - mean) / scale).numpy() * scale[0] + mean[0]  # scaling done in NumPy
    assert served.shape == (1, 12)
    np.testing.assert_allclose(served, by_hand, rtol=1e-4)
    assert 15000 < served.mean() < 50000  # megawatts, not standard scores
    none = loaded.serve(window=tf.constant(window[:0]))  # a batch of no windows: no forecasts, no graph error
    assert {name: value.shape for name, value in none.items()} == {name: (0, 12) for name in none}


def test_cli_forecast_prints_the_next_horizon_with_timestamps(exported, capsys, monkeypatch):
    folder, export = exported
    from pmdarima.datasets import load_taylor

    recent = pd.DataFrame({"time": pd.date_range("2000-08-20", periods=200, freq="30min"),
                           "demand_mw": load_taylor()[-200:]})
    recent.to_csv(folder / "recent.csv", index=False)
    run = kpipe("forecast", "electricity-seasonal-ar", "--input", "recent.csv", "--json", cwd=folder)  # a real process
    assert run.returncode == 0, run.stderr[-2000:]
    out = json.loads(run.stdout)
    assert out["target"] == "demand_mw" and len(out["forecast"]) == 12
    last = recent["time"].iloc[-1]
    assert out["times"][0] == (last + pd.Timedelta("30min")).isoformat()
    # The intervals are the export's conformal half-widths around the forecast, the 95 % one the wider.
    widths = json.loads((export / "features.json").read_text())["interval_half_widths"]
    forecast = np.array(out["forecast"])
    for level in ("80", "95"):
        np.testing.assert_allclose(np.array(out["intervals"][level]["upper"]) - forecast, widths[level], rtol=1e-4)
        np.testing.assert_allclose(forecast - np.array(out["intervals"][level]["lower"]), widths[level], rtol=1e-4)
    assert np.all(np.array(widths["95"]) >= np.array(widths["80"])) and min(widths["80"]) > 0


FORECAST_MISTAKES = {
    "window too short": (lambda f: f.iloc[:50], "has 50 rows but this model needs a window of 96 rows"),
    "missing value": (lambda f: f.assign(demand_mw=f["demand_mw"].where(f.index != 150)),
                      "missing values in 'demand_mw' within the last 96 rows"),
    "wrong features": (lambda f: f.rename(columns={"demand_mw": "load"}),
                       "lacks the column(s) demand_mw; this model needs 1 feature column(s): demand_mw"),
    "times out of order": (lambda f: f.iloc[::-1], "timestamps out of order at row 2"),
}


@pytest.mark.parametrize("case", FORECAST_MISTAKES)
def test_cli_forecast_mistakes_are_one_line_exit_2(exported, capsys, monkeypatch, case):
    folder, _ = exported
    change, message = FORECAST_MISTAKES[case]
    frame = pd.DataFrame({"time": pd.date_range("2000-08-20", periods=200, freq="30min"),
                          "demand_mw": np.linspace(20000, 30000, 200)})
    change(frame).to_csv(folder / "bad.csv", index=False)
    monkeypatch.chdir(folder)
    assert main(["forecast", "electricity-seasonal-ar", "--input", "bad.csv"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("kpipe: error: ") and message in err[0], err


def test_served_over_tf_serving_rest_with_its_intervals(exported):
    from pmdarima.datasets import load_taylor

    folder, export = exported
    series = load_taylor().astype("float32")
    windows = np.stack([series[-96:], series[-192:-96]]).reshape(2, 96, 1)
    loaded = tf.saved_model.load(str(export))  # kept: its variables die with it
    expected = loaded.serve(window=tf.constant(windows))
    with served_in_thread("electricity-seasonal-ar", cwd=folder) as server:
        status, body = server.post("/v1/models/electricity-seasonal-ar:predict", {"instances": windows.tolist()})
        assert status == 200, body
        for name in ("forecast", "lower_80", "upper_80", "lower_95", "upper_95"):
            np.testing.assert_allclose([row[name] for row in body["predictions"]], expected[name].numpy(), rtol=1e-5)
        status, body = server.post("/v1/models/electricity-seasonal-ar:predict", {"instances": [series[-50:].tolist()]})
        assert status == 400 and "input 'window' has shape [1, 50]; this signature takes window: float32[None, 96, 1]" \
            in body["error"], body
        gap = windows[:1].copy()
        gap[0, 5, 0] = np.nan
        status, body = server.post("/v1/models/electricity-seasonal-ar:predict", json.dumps({"instances": gap.tolist()}))
        assert status == 400 and "input 'window' holds NaN or infinity" in body["error"], body


def test_refit_trains_a_fresh_model_on_training_and_validation_windows(tmp_path):
    """With training.refit_with_validation the exported model's least-squares path is the ridge fit of
    every training + validation window (scikit-learn's Ridge as the reference), not of the training ones."""
    import keras
    from pmdarima.datasets import load_taylor
    from sklearn.linear_model import Ridge

    import kpipe.families.rnn_forecaster.model  # noqa: F401  (registers TargetSlice for model.keras)
    result = run_pipeline(load_pipeline("electricity-seasonal-ar", [  # in-process: the fixture runs the command
        *QUICK[1::2], "training.epochs=3", "training.refit_with_validation=true", "evaluation.baseline=false",
        f'export.dir="{tmp_path / "saved_models"}"']))
    assert "refit on training + validation" in result.summary
    export = tmp_path / "saved_models" / "electricity-seasonal-ar" / "1"
    metrics = json.loads((export / "metrics.json").read_text())
    refit, sizes = metrics["refit_with_validation"], metrics["data"]
    val_losses = [epoch["val_loss"] for epoch in metrics["history"]]
    assert refit["epochs"] == int(np.argmin(val_losses)) + 1 and len(refit["history"]) == refit["epochs"]
    window, horizon, season = 96, 12, 48
    validation_end = sizes["train"] + sizes["validation"]
    assert refit["windows"] == validation_end - horizon + 1 - window

    spec = json.loads((export / "features.json").read_text())
    scaled = (load_taylor().astype("float32") - spec["scaler_mean"][0]) / spec["scaler_scale"][0]

    def ridge_fit(end: int) -> np.ndarray:
        origins = np.arange(window, end - horizon + 1)
        inputs = scaled[origins[:, None] + np.arange(-window, 0)]
        targets = scaled[origins[:, None] + np.arange(horizon)] - scaled[origins[:, None] + np.arange(horizon) - season]
        return Ridge(alpha=1.0).fit(inputs.astype(np.float64), targets.astype(np.float64)).coef_.T

    kernel = keras.saving.load_model(export / "model.keras").get_layer("linear_autoregression").get_weights()[0]
    np.testing.assert_allclose(kernel, ridge_fit(validation_end), atol=2e-3)
    assert np.abs(kernel - ridge_fit(sizes["train"])).max() > 1e-2  # the training-only fit is another one


def test_mstl_baseline_inside_the_model_is_mstl_on_each_window(tmp_path, caplog, monkeypatch, capsys):
    """With model.add_baseline='mstl' the model without its recurrent correction forecasts what MSTL
    (statsforecast's trend model fitted on the training split, decomposed again on each window) forecasts
    from the same validation windows; the map is kept in the cache for the next run. A correction that
    does not lower validation MAE (a learning rate far too high) is switched off with "if_better"."""
    from pmdarima.datasets import load_taylor

    from kpipe.forecasting import baselines

    mstl_only = [*QUICK, "--set", 'model.add_baseline="mstl"', "--set", "model.linear_steps=0", "--set",
                 "evaluation.baseline=false", "--set", 'model.recurrent_correction="if_better"', "--set",
                 "training.learning_rate=0.5"]
    monkeypatch.chdir(tmp_path)  # in-process: the fixture runs the real command
    caplog.set_level("INFO")
    assert main(["run", "electricity-seasonal-ar", *mstl_only]) == 0
    assert "MSTL as an affine map of 96 steps" in caplog.text
    metrics = json.loads((tmp_path / "saved_models" / "electricity-seasonal-ar" / "1" / "metrics.json").read_text())
    y = load_taylor().astype(np.float64)
    train_end = metrics["data"]["train"]
    validation_end = train_end + metrics["data"]["validation"]
    window, horizon = 96, 12
    trend_model = baselines.fit_mstl_trend(y[:train_end], (48,))
    origins = np.arange(train_end, validation_end - horizon + 1)
    expected = np.stack([baselines.mstl_forecast(y[o - window:o], trend_model, (48,), horizon) for o in origins])
    mae = float(np.mean(np.abs(expected - y[origins[:, None] + np.arange(horizon)])))
    assert metrics["validation_mae"]["model_without_rnn"] == pytest.approx(mae, rel=1e-4)
    decision = metrics["recurrent_correction"]
    assert decision["kept"] is False and decision["validation_mae_with"] > decision["validation_mae_without"]
    assert metrics["test"]["model"]["mae"] == pytest.approx(metrics["test"]["model_without_rnn"]["mae"], rel=1e-6)
    assert "switched off" in capsys.readouterr().out

    caplog.clear()
    with caplog.at_level(logging.INFO):
        run_pipeline(load_pipeline("electricity-seasonal-ar", [*mstl_only[1::2], "training.seed=2",
                                                               f'export.dir="{tmp_path / "saved_models"}"']))
    assert "read from" in caplog.text
