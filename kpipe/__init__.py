"""kpipe: Keras 3 sequence-model builders run as named pipelines.

The public API, imported lazily so that `kpipe --help` and config errors do not wait for
TensorFlow to load:

    from kpipe import load_pipeline, run_pipeline, predict_texts, build_rnn_classifier, build_rnn_forecaster
"""

import importlib

__version__ = "0.1.0"

_EXPORTS = {
    "load_pipeline": "kpipe.pipelines",
    "list_pipelines": "kpipe.pipelines",
    "run_pipeline": "kpipe.pipelines",
    "PipelineConfig": "kpipe.pipeline_config",
    "predict_texts": "kpipe.tasks.classify",
    "RNNClassifierConfig": "kpipe.models.rnn_classifier",
    "build_rnn_classifier": "kpipe.models.rnn_classifier",
    "TextPreprocessingConfig": "kpipe.preprocessing.text",
    "make_text_dataset": "kpipe.preprocessing.text",
    "TextClassificationDataConfig": "kpipe.datasets.text_classification",
    "load_text_classification": "kpipe.datasets.text_classification",
    "forecast_table": "kpipe.tasks.forecast",
    "forecast_file": "kpipe.tasks.forecast",
    "RNNForecasterConfig": "kpipe.models.rnn_forecaster",
    "build_rnn_forecaster": "kpipe.models.rnn_forecaster",
    "WindowConfig": "kpipe.preprocessing.windows",
    "make_window_dataset": "kpipe.preprocessing.windows",
    "TimeSeriesDataConfig": "kpipe.datasets.time_series",
    "load_time_series": "kpipe.datasets.time_series",
    "load_word_vectors": "kpipe.embeddings",
    "TrainingConfig": "kpipe.training",
    "FineTuneSchedule": "kpipe.training",
    "KpipeError": "kpipe.errors",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name):
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'kpipe' has no attribute {name!r}")
