"""kpipe: Keras 3 sequence-model builders run as named pipelines.

The public API, imported lazily so that `kpipe --help` and config errors do not wait for
TensorFlow to load:

    from kpipe import load_pipeline, run_pipeline, predict_texts, build_rnn_classifier, build_rnn_forecaster
    from kpipe import build_transformer_classifier, build_seq2seq, build_char_generator, load_keras_model
"""

import importlib

__version__ = "0.1.0"

_EXPORTS = {
    "load_pipeline": "kpipe.config.pipelines",
    "list_pipelines": "kpipe.config.pipelines",
    "run_pipeline": "kpipe.tasks",
    "PipelineConfig": "kpipe.config.pipeline",
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
    "load_word_vectors": "kpipe.vectors.word_vectors",
    "TrainingConfig": "kpipe.training.loop",
    "FineTuneSchedule": "kpipe.training.loop",
    "KpipeError": "kpipe.errors",
    "load_keras_model": "kpipe.exports.open",
    "open_export": "kpipe.exports.open",
    "PretrainedClassifierConfig": "kpipe.models.configs",
    "build_pretrained_classifier": "kpipe.pretrained.classifier",
    "TuneOptions": "kpipe.tuning.study",
    "tune_pipeline": "kpipe.tuning.study",
    "TransformerClassifierConfig": "kpipe.models.transformer_classifier",
    "build_transformer_classifier": "kpipe.models.transformer_classifier",
    "build_masked_lm": "kpipe.models.transformer_classifier",
    "Seq2SeqConfig": "kpipe.models.seq2seq",
    "build_seq2seq": "kpipe.models.seq2seq",
    "CharGeneratorConfig": "kpipe.models.char_generator",
    "build_char_generator": "kpipe.models.char_generator",
    "CharTransformerConfig": "kpipe.models.char_transformer",
    "build_char_transformer": "kpipe.models.char_transformer",
    "LinearAttention": "kpipe.models.linear_attention",
    "RandomFeatureAttention": "kpipe.models.random_feature_attention",
    "FMMAttention": "kpipe.models.fmm_attention",
    "VariantTransformerEncoder": "kpipe.models.attention_variants",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name):
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'kpipe' has no attribute {name!r}")
