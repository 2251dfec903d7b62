"""The `rnn_forecaster` family's config, without TensorFlow (parsed and checked before TensorFlow loads)."""

from __future__ import annotations

import dataclasses

from kpipe.config.constraints import Checked, at_least, fraction, layer_sizes, one_of, setting
from kpipe.layers.settings import CELL_CLASSES

BASELINES = ("none", "naive", "seasonal_naive", "mstl")
LOSSES = ("mse", "mae", "huber")


@dataclasses.dataclass(frozen=True, kw_only=True)
class RNNForecasterConfig(Checked):
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
        add_baseline: "none", "naive", "seasonal_naive" or "mstl": the network forecasts the correction
            to that baseline, read from its own input window (the last value, the values one season
            back, or MSTL's forecast over every season of `preprocessing`, carried as a fixed affine
            map of the window: `kpipe.forecasting.mstl_operator`), instead of the whole value.
            Strongly seasonal series start from a good forecast. "mstl" needs a window of two of the
            longest seasons.
        linear_steps: > 0 adds a linear autoregressive path in parallel (LSTNet's "highway", Lai et al.
            2018): a Dense layer from the last `linear_steps` target values straight to the horizon.
            It can represent weighted seasonal averages and level shifts exactly, which the
            recurrent path learns only roughly from little data. 0 = off.
        loss: the training objective on scaled values: "mse", "mae" (what the report ranks by) or "huber".
        recurrent_correction: "always" keeps the trained (Conv1D →) RNN path; "if_better" keeps it only if
            it lowers the validation MAE of the baseline and linear paths without it, and otherwise
            switches it off (its output layer zeroed) in what is tested and exported; the report says
            which. Needs a baseline or a linear path to fall back on.
        linear_ridge: the L2 penalty of the ridge regression that sets the linear path (`fit_linear_path`,
            on the training windows, before the recurrent path is trained). The linear path is not
            trained by gradient descent, which is slow and noisy on strongly correlated neighbouring
            steps, where the closed form is exact.
        window: input steps (set by kpipe from `preprocessing.window`).
        horizon: output steps (set by kpipe from `preprocessing.horizon`).
        num_features: input features, target included (set by kpipe from the data).
        season_length: the seasonal period (set by kpipe from `preprocessing.season_length`).
    """

    family: str = setting("rnn_forecaster", one_of(("rnn_forecaster",)))
    cell: str = setting("lstm", one_of(CELL_CLASSES))
    units: tuple[int, ...] = setting((64,), layer_sizes())
    conv_filters: int = setting(0, at_least(0))
    conv_kernel: int = setting(3, at_least(1))
    conv_stride: int = setting(1, at_least(1))
    dropout: float = setting(0.0, fraction())
    add_baseline: str = setting("none", one_of(BASELINES))
    linear_steps: int = setting(0, at_least(0))
    linear_ridge: float = setting(1.0, at_least(0.0))
    loss: str = setting("mse", one_of(LOSSES))
    recurrent_correction: str = setting("always", one_of(("always", "if_better")))
    window: int = setting(336, at_least(1), derived=True)
    horizon: int = setting(48, at_least(1), derived=True)
    num_features: int = setting(1, at_least(1), derived=True)
    season_length: int = setting(336, at_least(1), derived=True)

    def resolved(self, windows, num_features: int = 1) -> "RNNForecasterConfig":
        """This config with the window, horizon, season and feature count the data and windows set."""
        return dataclasses.replace(self, window=windows.window, horizon=windows.horizon, num_features=num_features,
                                   season_length=windows.season_length)

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
        if self.recurrent_correction == "if_better" and self.add_baseline == "none" and not self.linear_steps:
            return (f"{m}recurrent_correction='if_better' needs something to fall back on: set {m}add_baseline "
                    f"or {m}linear_steps")
        if self.add_baseline == "mstl" and self.window < 2 * self.season_length:
            return (f"{m}add_baseline='mstl' needs a window of two seasons; got {w}window={self.window}, "
                    f"{w}season_length={self.season_length}: set {w}window >= {2 * self.season_length}")
        return ""
