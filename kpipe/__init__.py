"""kpipe: Keras 3 sequence-model builders run as named pipelines.

The public API, imported lazily so that `kpipe --help` and config errors do not wait for
TensorFlow to load:

    from kpipe import load_pipeline, run_pipeline, predict_texts, build_rnn_classifier, build_rnn_forecaster
    from kpipe import build_transformer_classifier, build_seq2seq, build_char_generator, load_keras_model
"""

import importlib

__version__ = "0.1.0"

_EXPORTS = {
    "load_pipeline": "kpipe.tasks.named_pipelines",
    "list_pipelines": "kpipe.tasks.named_pipelines",
    "run_pipeline": "kpipe.tasks.runner",
    "PipelineConfig": "kpipe.config.pipeline",
    "predict_texts": "kpipe.tasks.classify.predict",
    "RNNClassifierConfig": "kpipe.families.rnn_classifier.config",
    "build_rnn_classifier": "kpipe.families.rnn_classifier.model",
    "TextPreprocessingConfig": "kpipe.preprocessing.configs",
    "make_text_dataset": "kpipe.preprocessing.text",
    "TextClassificationDataConfig": "kpipe.datasets.text_classification",
    "load_text_classification": "kpipe.datasets.text_classification",
    "forecast_table": "kpipe.tasks.forecast.predict",
    "forecast_file": "kpipe.tasks.forecast.predict",
    "RNNForecasterConfig": "kpipe.families.rnn_forecaster.config",
    "build_rnn_forecaster": "kpipe.families.rnn_forecaster.model",
    "WindowConfig": "kpipe.preprocessing.configs",
    "make_window_dataset": "kpipe.preprocessing.windows",
    "TimeSeriesDataConfig": "kpipe.datasets.time_series",
    "load_time_series": "kpipe.datasets.time_series",
    "load_word_vectors": "kpipe.vectors.word_vectors",
    "TrainingConfig": "kpipe.config.training",
    "FineTuneSchedule": "kpipe.training.loop",
    "KpipeError": "kpipe.errors",
    "load_keras_model": "kpipe.exports.open",
    "open_export": "kpipe.exports.open",
    "PretrainedClassifierConfig": "kpipe.families.pretrained_classifier.config",
    "build_pretrained_classifier": "kpipe.families.pretrained_classifier.model",
    "TuneOptions": "kpipe.tuning.study",
    "tune_pipeline": "kpipe.tuning.study",
    "TransformerClassifierConfig": "kpipe.families.transformer_classifier.config",
    "build_transformer_classifier": "kpipe.families.transformer_classifier.model",
    "build_masked_lm": "kpipe.families.transformer_classifier.model",
    "Seq2SeqConfig": "kpipe.families.seq2seq_attention.config",
    "build_seq2seq": "kpipe.families.seq2seq_attention.model",
    "CharGeneratorConfig": "kpipe.families.char_rnn.config",
    "build_char_generator": "kpipe.families.char_rnn.model",
    "CharTransformerConfig": "kpipe.families.char_transformer.config",
    "build_char_transformer": "kpipe.families.char_transformer.model",
    "LinearAttention": "kpipe.layers.linear_attention",
    "RandomFeatureAttention": "kpipe.layers.random_feature_attention",
    "FMMAttention": "kpipe.layers.fmm_attention",
    "VariantTransformerEncoder": "kpipe.layers.attention_variants",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name):
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'kpipe' has no attribute {name!r}")
