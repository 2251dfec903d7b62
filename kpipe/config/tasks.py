"""The one registry of tasks: each task's config section types, model families, cross-section
rules, and where its code lives. Nothing here imports TensorFlow, so a config is parsed and
checked (and a mistake in it reported) in well under a second; the task's module, which trains,
is imported only when the task runs.
"""

from __future__ import annotations

import dataclasses
import importlib
import logging
from typing import TYPE_CHECKING, Callable, Mapping

from kpipe.datasets.corpus import CorpusDataConfig
from kpipe.datasets.names import NamesDataConfig
from kpipe.datasets.pairs import PairsDataConfig
from kpipe.datasets.text_classification import TextClassificationDataConfig
from kpipe.datasets.time_series import TimeSeriesDataConfig
from kpipe.errors import ConfigError
from kpipe.models.configs import (BagOfNgramsConfig, CharGeneratorConfig, CharTransformerConfig,
                                  EnsembleClassifierConfig, PretrainedClassifierConfig, RNNClassifierConfig,
                                  RNNForecasterConfig, SentenceEncoderConfig, Seq2SeqConfig,
                                  TransformerClassifierConfig, Word2VecConfig, pretrained_preset)
from kpipe.pretrained.presets import check_preset, naming
from kpipe.preprocessing.configs import (NamesPreprocessingConfig, PairPreprocessingConfig, SkipGramConfig,
                                         TextPreprocessingConfig, WindowConfig)

if TYPE_CHECKING:
    from kpipe.config.pipeline import PipelineConfig, RunResult

log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class TaskSpec:
    """What a task needs: its config section types, its model families, and how to run it."""

    name: str
    data: type
    preprocessing: type
    models: Mapping[str, type]  # model.family -> config class
    runner: str                 # "module:function" that trains, evaluates and exports
    check: Callable[["PipelineConfig"], None] | None = None  # rules across sections; raises ConfigError
    headline: tuple[str, ...] = ()  # the metrics.json entries (dotted paths) `kpipe compare` shows first

    def run(self, config: "PipelineConfig") -> "RunResult":
        module, function = self.runner.split(":")
        return getattr(importlib.import_module(module), function)(config)


# === Rules that span config sections ===

def check_classify_config(config: "PipelineConfig") -> None:
    model, prefix = config.model, "model."
    if isinstance(model, EnsembleClassifierConfig):
        for key in ("ngrams_training", "recurrent_training"):
            own = getattr(model, key)
            for run_key in ("strategy", "worker_timeout_s", "refit_with_validation"):
                if own and getattr(own, run_key) != getattr(config.training, run_key):
                    raise ConfigError(f"model.{key}.{run_key} differs from training.{run_key}; a run's strategy, "
                                      f"worker timeout and refit are [training]'s: set it there only")
        if model.recurrent:
            check_recurrent_member(model.recurrent, (model.recurrent_training or config.training).epochs,
                                   "model.recurrent.", "model.recurrent_training." if model.recurrent_training
                                   else "training.")
        model, prefix = model.sequence, "model.sequence."
    if isinstance(model, BagOfNgramsConfig):
        return
    if isinstance(model, PretrainedClassifierConfig):
        with naming(pretrained_preset(config.model)[1]):
            check_preset(model.preset, config.preprocessing.sequence_length)
        if model.backbone_training == "two_phase" and model.head_epochs >= config.training.epochs:
            raise ConfigError(f"{prefix}head_epochs={model.head_epochs} leaves no epoch for fine-tuning the encoder "
                              f"with training.epochs={config.training.epochs}; make head_epochs smaller than epochs")
        return
    if isinstance(model, TransformerClassifierConfig):
        if config.preprocessing.tokenizer != "wordpiece":
            log.info("A transformer on whole words: preprocessing.tokenizer = \"wordpiece\" usually does better")
        return
    check_recurrent_member(model, config.training.epochs, prefix)


def check_recurrent_member(model: RNNClassifierConfig, epochs: int, prefix: str = "model.",
                           training: str = "training.") -> None:
    """A recurrent classifier's pretrained-vector settings against the epochs it trains for (`prefix` and
    `training` name its tables in the messages)."""
    if model.embedding_training == "two_phase":
        if not model.pretrained_embeddings:
            raise ConfigError(f'{prefix}embedding_training="two_phase" fine-tunes pretrained vectors, but '
                              f'{prefix}pretrained_embeddings is empty; set it (e.g. "glove:6B.50d") or use '
                              '"trainable"')
        if model.frozen_epochs >= epochs:
            raise ConfigError(f"{prefix}frozen_epochs={model.frozen_epochs} leaves no epoch for fine-tuning with "
                              f"{training}epochs={epochs}; make frozen_epochs smaller than epochs")


def check_embed_config(config: "PipelineConfig") -> None:
    check_preset(config.model.preset, config.preprocessing.sequence_length)


def check_forecast_config(config: "PipelineConfig") -> None:
    problem = config.model.resolved(config.preprocessing).window_problem("model.", "preprocessing.")
    if problem:
        raise ConfigError(problem)
    data: TimeSeriesDataConfig = config.data
    if data.target_column and data.target_column in data.covariates:
        raise ConfigError(f"data.target_column '{data.target_column}' is also listed in data.covariates; "
                          "the target is always an input, so list only the other columns")


def check_word2vec_config(config: "PipelineConfig") -> None:
    if config.training.early_stopping_patience:
        raise ConfigError("word2vec has no validation split to stop early on; set training.early_stopping_patience=0")
    group = config.preprocessing.negatives_shared_by
    if config.training.batch_size % group:
        raise ConfigError(f"training.batch_size={config.training.batch_size} is not a multiple of "
                          f"preprocessing.negatives_shared_by={group}; make it one (e.g. {group * 64})")
    if config.model.sparse_updates:
        if config.training.optimizer != "sgd":
            raise ConfigError(f'model.sparse_updates trains by plain SGD, not training.optimizer='
                              f'"{config.training.optimizer}"; set training.optimizer="sgd" (learning_rate is '
                              'then the step per pair, e.g. 0.025) or model.sparse_updates=false')
        if config.training.learning_rate_schedule != "constant":
            raise ConfigError("model.sparse_updates decays the learning rate linearly itself; set "
                              'training.learning_rate_schedule="constant"')


def check_replicas(config: "PipelineConfig", replicas: int) -> None:
    """Rules on the number of replicas the run trains on: known from TF_CONFIG before TensorFlow loads for a
    multi-worker run, from the strategy otherwise."""
    if getattr(config.model, "sparse_updates", False) and replicas > 1:
        raise ConfigError(f"model.sparse_updates trains on one device, not {replicas} replicas; "
                          "use --strategy default, or model.sparse_updates=false")


TASKS = {spec.name: spec for spec in (
    TaskSpec("classify", TextClassificationDataConfig, TextPreprocessingConfig,
             {"rnn_classifier": RNNClassifierConfig, "transformer_classifier": TransformerClassifierConfig,
              "bag_of_ngrams": BagOfNgramsConfig, "ensemble": EnsembleClassifierConfig,
              "pretrained_classifier": PretrainedClassifierConfig},
             "kpipe.tasks.classify:run_classify", check_classify_config,
             headline=("accuracy", "macro_f1", "baseline.accuracy")),
    TaskSpec("embed", TextClassificationDataConfig, TextPreprocessingConfig,
             {"sentence_encoder": SentenceEncoderConfig}, "kpipe.tasks.embed:run_embed", check_embed_config,
             headline=("accuracy", "macro_f1", "baseline.accuracy")),
    TaskSpec("forecast", TimeSeriesDataConfig, WindowConfig, {"rnn_forecaster": RNNForecasterConfig},
             "kpipe.tasks.forecast:run_forecast", check_forecast_config,
             headline=("test.model.mae", "test.model.mape", "best_baseline", "model_vs_best_baseline_mae")),
    TaskSpec("generate", NamesDataConfig, NamesPreprocessingConfig, {"char_rnn": CharGeneratorConfig, "char_transformer": CharTransformerConfig},
             "kpipe.tasks.generate:run_generate", headline=("test_nll_per_char", "bigram_nll_per_char")),
    TaskSpec("translate", PairsDataConfig, PairPreprocessingConfig, {"seq2seq_attention": Seq2SeqConfig},
             "kpipe.tasks.translate:run_translate", headline=("word_error_rate", "token_error_rate")),
    TaskSpec("word2vec", CorpusDataConfig, SkipGramConfig, {"skipgram": Word2VecConfig, "cbow": Word2VecConfig},
             "kpipe.tasks.word2vec:run_word2vec", check_word2vec_config,
             headline=("final_loss", "words_per_second")),
)}
