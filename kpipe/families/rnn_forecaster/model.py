"""(Conv1D →) stacked LSTM/GRU → Dense(horizon): a direct multi-horizon forecaster (functional API)."""

from __future__ import annotations

import keras

from kpipe.families.rnn_forecaster.config import RNNForecasterConfig
from kpipe.layers.recurrent_cells import CELLS


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
    # float32 even under mixed precision: the baseline is the forecast's backbone, not a 16-bit estimate.
    if config.add_baseline == "mstl":
        # MSTL's forecast is an affine map of the window (kpipe.forecasting.mstl_operator): a fixed
        # Dense layer that `set_mstl_baseline` fills in.
        whole = TargetSlice(0, config.window, config.window, dtype="float32", name="target_window")(inputs)
        baseline = keras.layers.Dense(config.horizon, kernel_initializer="zeros", dtype="float32", trainable=False,
                                      name="mstl")(whole)
    else:
        if config.add_baseline == "naive":
            start, stop = config.window - 1, config.window  # the last value, repeated over the horizon
        else:
            start = config.window - config.season_length     # y[t + j - m] for j < horizon <= m
            stop = start + config.horizon
        baseline = TargetSlice(start, stop, config.horizon, dtype="float32", name=config.add_baseline)(inputs)
    forecast = keras.layers.Add(name="forecast_plus_baseline", dtype="float32")([baseline, correction])
    return keras.Model(inputs, forecast, name="rnn_forecaster")


def set_mstl_baseline(model: keras.Model, operator) -> None:
    """Fill the `mstl` layer of a model built with `add_baseline="mstl"` with MSTL's affine map in the
    model's scaled units (`AffineForecast.in_scaled_units`)."""
    model.get_layer("mstl").set_weights([operator.matrix.T.astype("float32"), operator.offset.astype("float32")])


def baseline_forecast(model: keras.Model, config: RNNForecasterConfig, inputs):
    """The baseline part of the model's forecast (scaled units, NumPy float64) for windows (n, window, features)."""
    import numpy as np

    inputs = np.asarray(inputs, np.float64)
    if config.add_baseline == "naive":
        return np.repeat(inputs[:, -1:, 0], config.horizon, axis=1)
    if config.add_baseline == "seasonal_naive":
        start = config.window - config.season_length
        return inputs[:, start:start + config.horizon, 0]
    if config.add_baseline == "mstl":
        kernel, bias = model.get_layer("mstl").get_weights()
        return inputs[:, :, 0] @ kernel.astype(np.float64) + bias
    return np.zeros((len(inputs), config.horizon))


def fit_linear_path(model: keras.Model, config: RNNForecasterConfig, inputs, targets) -> None:
    """Set the linear path to the ridge-regression fit of `targets` minus the baseline.

    Args:
        model: from `build_rnn_forecaster(config)` with `config.linear_steps > 0` (and its MSTL
            baseline set, if it has one).
        inputs: scaled training windows (n, window, features); feature 0 is the target.
        targets: their scaled targets (n, horizon).
    """
    import numpy as np

    inputs = np.asarray(inputs, np.float64)
    targets = np.asarray(targets, np.float64) - baseline_forecast(model, config, inputs)
    recent = inputs[:, config.window - config.linear_steps:, 0]
    design = np.concatenate([recent, np.ones((len(recent), 1))], axis=1)
    penalty = config.linear_ridge * np.eye(design.shape[1])
    penalty[-1, -1] = 0.0  # the bias is not shrunk
    solution = np.linalg.solve(design.T @ design + penalty, design.T @ targets)
    model.get_layer("linear_autoregression").set_weights([solution[:-1].astype("float32"),
                                                          solution[-1].astype("float32")])
