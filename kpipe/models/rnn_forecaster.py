"""(Conv1D →) stacked LSTM/GRU → Dense(horizon): a direct multi-horizon forecaster (functional API)."""

from __future__ import annotations

import dataclasses

import keras

from kpipe.config import DERIVED, check_choice, check_layer_sizes, check_range
from kpipe.models.recurrent_cells import CELLS

BASELINES = ("none", "naive", "seasonal_naive")
LOSSES = ("mse", "mae", "huber")


@dataclasses.dataclass(frozen=True, kw_only=True)
class RNNForecasterConfig:
    """Hyperparameters of `build_rnn_forecaster`.

    Args:
        family: always "rnn_forecaster".
        cell: "lstm" or "gru".
        units: units of each stacked recurrent layer, bottom first.
        conv_filters: > 0 puts a Conv1D (ReLU) before the recurrent layers; 0 = none.
        conv_kernel: its kernel size.
        conv_stride: its stride: > 1 shortens long windows (a week of half-hours is 336 steps)
            before the slower recurrent layers.
        dropout: dropout on each recurrent layer's inputs and before the output layer.
        add_baseline: "none", "naive" or "seasonal_naive": the network forecasts the correction to
            that baseline, read from its own input window (the last value, or the values one season
            back), instead of the whole value. Strongly seasonal series start from a good forecast.
        linear_steps: > 0 adds a linear autoregressive path in parallel (LSTNet's "highway", Lai et al.
            2018): a Dense layer from the last `linear_steps` target values straight to the horizon.
            It can represent weighted seasonal averages and level shifts exactly, which the
            recurrent path learns only roughly from little data. 0 = off.
        loss: the training objective on scaled values: "mse", "mae" (what the report ranks by) or "huber".
        linear_ridge: the L2 penalty of the ridge regression that sets the linear path (`fit_linear_path`,
            on the training windows, before the recurrent path is trained). The linear path is not
            trained by gradient descent, which is slow and noisy on strongly correlated neighbouring
            steps, where the closed form is exact.
        window: input steps (set by kpipe from `preprocessing.window`).
        horizon: output steps (set by kpipe from `preprocessing.horizon`).
        num_features: input features, target included (set by kpipe from the data).
        season_length: the seasonal period (set by kpipe from `preprocessing.season_length`).
    """

    family: str = "rnn_forecaster"
    cell: str = "lstm"
    units: tuple[int, ...] = (64,)
    conv_filters: int = 0
    conv_kernel: int = 3
    conv_stride: int = 1
    dropout: float = 0.0
    add_baseline: str = "none"
    linear_steps: int = 0
    linear_ridge: float = 1.0
    loss: str = "mse"
    window: int = dataclasses.field(default=336, metadata=DERIVED)
    horizon: int = dataclasses.field(default=48, metadata=DERIVED)
    num_features: int = dataclasses.field(default=1, metadata=DERIVED)
    season_length: int = dataclasses.field(default=336, metadata=DERIVED)

    def __post_init__(self):
        check_choice("family", self.family, ("rnn_forecaster",))
        check_choice("cell", self.cell, CELLS)
        check_layer_sizes("units", self.units)
        check_range("conv_filters", self.conv_filters, low=0)
        check_range("conv_kernel", self.conv_kernel, low=1)
        check_range("conv_stride", self.conv_stride, low=1)
        check_range("dropout", self.dropout, low=0.0, high=1.0, high_inclusive=False)
        check_choice("add_baseline", self.add_baseline, BASELINES)
        check_range("linear_steps", self.linear_steps, low=0)
        check_choice("loss", self.loss, LOSSES)
        check_range("linear_ridge", self.linear_ridge, low=0.0)
        for name in ("window", "horizon", "num_features", "season_length"):
            check_range(name, getattr(self, name), low=1)

    def window_problem(self, model_prefix: str = "", window_prefix: str = "") -> str:
        """Why the window is too short for the chosen paths ("" if it is not). Checked when building,
        since window, horizon and season_length come from the preprocessing config; the prefixes
        name the fields as a pipeline config does ("model.", "preprocessing.")."""
        m, w = model_prefix, window_prefix
        if self.linear_steps > self.window:
            return f"{m}linear_steps={self.linear_steps} is longer than {w}window={self.window}"
        if self.add_baseline == "seasonal_naive" and not (self.horizon <= self.season_length <= self.window):
            return (f"{m}add_baseline='seasonal_naive' needs horizon <= season_length <= window; got "
                    f"{w}horizon={self.horizon}, {w}season_length={self.season_length}, {w}window={self.window}")
        return ""


@keras.saving.register_keras_serializable(package="kpipe")
class TargetSlice(keras.layers.Layer):
    """Steps [start, stop) of feature 0 of a (batch, time, features) window, broadcast to `horizon` steps
    (a one-step slice is repeated; a longer one must already have `horizon` steps)."""

    def __init__(self, start: int, stop: int, horizon: int, **kwargs):
        super().__init__(**kwargs)
        self.start, self.stop, self.horizon = start, stop, horizon

    def call(self, window):
        values = window[:, self.start:self.stop, 0]
        return keras.ops.broadcast_to(values, (keras.ops.shape(window)[0], self.horizon))

    def compute_output_shape(self, input_shape):
        return (input_shape[0], self.horizon)

    def get_config(self):
        return super().get_config() | {"start": self.start, "stop": self.stop, "horizon": self.horizon}


def build_rnn_forecaster(config: RNNForecasterConfig) -> keras.Model:
    """Build a forecaster mapping (batch, window, num_features) scaled inputs to (batch, horizon).

    Example:
        >>> model = build_rnn_forecaster(RNNForecasterConfig(window=24, horizon=6, num_features=3))
        >>> model.output_shape
        (None, 6)
    """
    if config.window_problem():
        raise ValueError(config.window_problem())

    # === Inputs ===
    inputs = keras.Input(shape=(config.window, config.num_features), name="window")
    x = inputs

    # === Optional convolution: local patterns, and a shorter sequence for the RNN ===
    if config.conv_filters:
        x = keras.layers.Conv1D(config.conv_filters, config.conv_kernel, strides=config.conv_stride,
                                padding="causal" if config.conv_stride == 1 else "valid", activation="relu",
                                name="conv")(x)

    # === Recurrent stack: every layer but the last returns the full sequence ===
    for i, units in enumerate(config.units):
        last = i == len(config.units) - 1
        x = CELLS[config.cell](units, return_sequences=not last, dropout=config.dropout,
                               name=f"{config.cell}_{i}")(x)

    # === Direct multi-horizon head (float32 even under mixed precision) ===
    if config.dropout:
        x = keras.layers.Dropout(config.dropout, name="head_dropout")(x)
    # With a baseline or linear path the recurrent path learns a correction, and starts at zero so
    # that training begins from the baseline's (or the least-squares fit's) forecast, not from noise.
    residual = config.add_baseline != "none" or config.linear_steps > 0
    correction = keras.layers.Dense(config.horizon, kernel_initializer="zeros" if residual else "glorot_uniform",
                                    dtype="float32", name="forecast")(x)

    # === Optional linear autoregressive path on the recent target values ===
    if config.linear_steps:
        recent = TargetSlice(config.window - config.linear_steps, config.window, config.linear_steps,
                             dtype="float32", name="recent_target")(inputs)
        # Not trained by gradient descent: `fit_linear_path` sets it to the least-squares optimum, which
        # Adam's per-weight steps would only scramble (neighbouring steps are highly correlated).
        linear = keras.layers.Dense(config.horizon, kernel_initializer="zeros", dtype="float32", trainable=False,
                                    name="linear_autoregression")(recent)
        correction = keras.layers.Add(name="recurrent_plus_linear", dtype="float32")([correction, linear])
    if config.add_baseline == "none":
        return keras.Model(inputs, correction, name="rnn_forecaster")

    # === Baseline from the input window (feature 0 is the target), plus the learned correction ===
    if config.add_baseline == "naive":
        start, stop = config.window - 1, config.window  # the last value, repeated over the horizon
    else:
        start = config.window - config.season_length     # y[t + j - m] for j < horizon <= m
        stop = start + config.horizon
    # float32 even under mixed precision: the baseline is the forecast's backbone, not a 16-bit estimate.
    baseline = TargetSlice(start, stop, config.horizon, dtype="float32", name=config.add_baseline)(inputs)
    forecast = keras.layers.Add(name="forecast_plus_baseline", dtype="float32")([baseline, correction])
    return keras.Model(inputs, forecast, name="rnn_forecaster")


def fit_linear_path(model: keras.Model, config: RNNForecasterConfig, inputs, targets) -> None:
    """Set the linear path to the ridge-regression fit of `targets` minus the baseline.

    Args:
        model: from `build_rnn_forecaster(config)` with `config.linear_steps > 0`.
        inputs: scaled training windows (n, window, features); feature 0 is the target.
        targets: their scaled targets (n, horizon).
    """
    import numpy as np

    inputs, targets = np.asarray(inputs, np.float64), np.asarray(targets, np.float64)
    if config.add_baseline == "naive":
        targets = targets - inputs[:, -1:, 0]
    elif config.add_baseline == "seasonal_naive":
        start = config.window - config.season_length
        targets = targets - inputs[:, start:start + config.horizon, 0]
    recent = inputs[:, config.window - config.linear_steps:, 0]
    design = np.concatenate([recent, np.ones((len(recent), 1))], axis=1)
    penalty = config.linear_ridge * np.eye(design.shape[1])
    penalty[-1, -1] = 0.0  # the bias is not shrunk
    solution = np.linalg.solve(design.T @ design + penalty, design.T @ targets)
    model.get_layer("linear_autoregression").set_weights([solution[:-1].astype("float32"),
                                                          solution[-1].astype("float32")])
