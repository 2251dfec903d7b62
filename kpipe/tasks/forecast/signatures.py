"""The forecaster export: raw windows in original units in, the next `horizon` values and their conformal
intervals out; the scaling lives inside the graph.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import keras
import numpy as np
import pandas as pd
import tensorflow as tf

from kpipe.config.pipeline import PipelineConfig
from kpipe.datasets.time_series import TimeSeries
from kpipe.evaluation import reporting
from kpipe.portable.export_files import FEATURES_FILE
from kpipe.exports import run_files, saved_model
from kpipe.preprocessing.configs import WindowConfig
from kpipe.preprocessing.windows import Scaler


class ForecasterServing(tf.Module):
    """Raw window (original units) -> forecast and prediction intervals (original units), in one graph."""

    def __init__(self, model: keras.Model, scaler: Scaler, window: int, num_features: int,
                 half_widths: dict[int, np.ndarray]):
        super().__init__()
        self.model = model
        self.mean = tf.constant(scaler.mean)
        self.scale = tf.constant(scaler.scale)
        self.half_widths = {level: tf.constant(width, tf.float32) for level, width in half_widths.items()}
        self.horizon = int(model.output_shape[-1])
        self.serve = tf.function(self._serve, input_signature=[
            tf.TensorSpec([None, window, num_features], tf.float32, name="window")])

    def _serve(self, window: tf.Tensor) -> dict[str, tf.Tensor]:
        scaled = (window - self.mean) / self.scale
        # a batch of no windows answers no forecasts (the recurrent layers cannot unstack an empty batch)
        forecast = tf.cond(tf.shape(window)[0] > 0,
                           lambda: tf.cast(self.model(scaled, training=False), tf.float32) * self.scale[0]
                           + self.mean[0],
                           lambda: tf.zeros([0, self.horizon], tf.float32))
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
