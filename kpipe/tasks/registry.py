"""The one registry of tasks, beside the tasks: each task's config section types, model families,
cross-section rules, where its code lives, and the parser that reads a pipeline config with them. Nothing
here imports TensorFlow, so a config is parsed and checked (and a mistake in it reported) in well under a
second; the task's `run` module, which trains, is imported only when the task runs.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any, Callable, Mapping

from kpipe.config.pipeline import NAME_PATTERN, EvaluationConfig, ExportConfig, PipelineConfig, RunResult
from kpipe.config.strict import from_dict
from kpipe.config.training import TrainingConfig
from kpipe.datasets.corpus import CorpusDataConfig
from kpipe.datasets.documents import DocumentsDataConfig
from kpipe.datasets.names import NamesDataConfig
from kpipe.datasets.pairs import PairsDataConfig
from kpipe.datasets.questions import QuestionsDataConfig
from kpipe.datasets.tagged import TaggedDataConfig
from kpipe.datasets.text_classification import TextClassificationDataConfig
from kpipe.datasets.time_series import TimeSeriesDataConfig
from kpipe.errors import ConfigError, did_you_mean
from kpipe.families import (
    bag_of_ngrams,
    char_rnn,
    char_transformer,
    ensemble,
    gpt,
    pretrained_classifier,
    pretrained_reader,
    pretrained_tagger,
    rnn_classifier,
    rnn_forecaster,
    rnn_lm,
    rnn_tagger,
    sentence_encoder,
    seq2seq_attention,
    seq2seq_transformer,
    transformer_classifier,
    word2vec,
)
from kpipe.families.bag_of_ngrams.config import BagOfNgramsConfig
from kpipe.families.ensemble.config import EnsembleClassifierConfig
from kpipe.families.pretrained_classifier.config import PretrainedClassifierConfig, pretrained_preset
from kpipe.families.rnn_classifier.config import RNNClassifierConfig
from kpipe.families.spec import FamilySpec, resolve
from kpipe.families.transformer_classifier.config import TransformerClassifierConfig
from kpipe.preprocessing.configs import (
    AnswerPreprocessingConfig,
    NamesPreprocessingConfig,
    LanguageModelPreprocessingConfig,
    PairPreprocessingConfig,
    SkipGramConfig,
    TaggingPreprocessingConfig,
    TextPreprocessingConfig,
    WindowConfig,
)
from kpipe.pretrained.presets import check_preset, naming

log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class TaskSpec:
    """Everything kpipe needs to know about a task, in one row of `TASKS`.

    Args:
        name: the pipeline's `task`.
        data, preprocessing: its config section types.
        families: its model families (the first is the default `model.family`), each declared in its own folder.
        runner: "module:function" that trains, evaluates and exports.
        command: the command that answers with the task's SavedModel exports (`EXPORT` stands for the folder),
            named when a user opens one with another command.
        portable_command: the same for its ONNX / LiteRT exports, when it differs.
        tuning_metric: the validation figure `kpipe tune` scores trials on (raises ConfigError for tasks that have
            none).
        monitors: the validation metrics its epochs log, besides `val_loss` (`training.early_stopping_monitor`).
        trainers: model.family -> "module:function" that trains that family, for tasks whose families train
            differently (the others build through `FamilySpec.builder` and train alike).
        check: rules across sections; raises ConfigError.
        headline: the metrics.json entries (dotted paths) `kpipe compare` shows first.
    """

    name: str
    data: type
    preprocessing: type
    families: tuple[FamilySpec, ...]
    runner: str
    command: str
    tuning_metric: Callable[["PipelineConfig"], str]
    portable_command: str = ""
    monitors: tuple[str, ...] = ()
    trainers: Mapping[str, str] = dataclasses.field(default_factory=dict)
    check: Callable[["PipelineConfig"], None] | None = None
    headline: tuple[str, ...] = ()

    @property
    def models(self) -> dict[str, type]:
        """model.family -> its config class."""
        return {family.name: family.config for family in self.families}

    def family(self, name: str) -> FamilySpec:
        return next(family for family in self.families if family.name == name)

    def family_of(self, model: Mapping[str, Any]) -> Any:
        """The `model.family` a [model] table names; the task's first family where it names none."""
        return model.get("family", self.families[0].name)

    def trainer(self, family: str) -> Callable:
        """The function that trains `family` (imports TensorFlow)."""
        return resolve(self.trainers[family])

    def run(self, config: "PipelineConfig") -> "RunResult":
        return resolve(self.runner)(config)


# === Rules that span config sections ===

def check_classify_config(config: "PipelineConfig") -> None:
    model, prefix = config.model, "model."
    data: TextClassificationDataConfig = config.data
    if data.source == "shards" and not family_spec("classify", model.family).shards:
        streaming = [family.name for family in TASKS["classify"].families if family.shards]
        raise ConfigError(f"model.family='{model.family}' reads its data in memory; sharded data (a glob or a folder "
                          f"of shards) takes one of the families {', '.join(streaming)}")
    if isinstance(model, EnsembleClassifierConfig):
        check_ngrams_member(model.ngrams, data, "model.ngrams.")
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
        check_ngrams_member(model, data, prefix)
        return
    if isinstance(model, PretrainedClassifierConfig):
        with naming(pretrained_preset(config.model)[1]):
            check_preset(model.preset, config.preprocessing.sequence_length)
        if model.backbone_training == "two_phase" and model.head_epochs >= config.training.epochs:
            raise ConfigError(f"{prefix}head_epochs={model.head_epochs} leaves no epoch for fine-tuning the encoder "
                              f"with training.epochs={config.training.epochs}; make head_epochs smaller than epochs")
        return
    if isinstance(model, TransformerClassifierConfig):
        if data.pairs:
            raise ConfigError(f"{prefix}family='transformer_classifier' reads one text; for pairs of texts "
                              "(data.text_pair_column) use 'pretrained_classifier' (a cross-encoder), 'rnn_classifier' "
                              "(a siamese encoder) or 'bag_of_ngrams'")
        if config.preprocessing.tokenizer != "wordpiece":
            log.info("A transformer on whole words: preprocessing.tokenizer = \"wordpiece\" usually does better")
        return
    check_recurrent_member(model, config.training.epochs, prefix)


def check_ngrams_member(model: BagOfNgramsConfig, data: TextClassificationDataConfig, prefix: str) -> None:
    """NB weights are the ratios of one text's n-grams, one per label (against the rest) without a hidden layer."""
    if model.weighting == "nb" and data.multi_label and model.hidden_units:
        raise ConfigError(f"{prefix}weighting='nb' with several labels per text weighs each label's n-grams apart, "
                          f"which a shared hidden layer cannot: use {prefix}hidden_units=0 or {prefix}weighting='tfidf'")
    if model.weighting == "nb" and data.multi_label and data.source == "shards":
        raise ConfigError(f"{prefix}weighting='nb' with several labels per text counts n-grams per label in memory, "
                          f"not over streamed shards: use {prefix}weighting='tfidf' (or 'binary')")
    if model.weighting == "nb" and data.pairs:
        raise ConfigError(f"{prefix}weighting='nb' weighs the n-grams of one text; pairs of texts "
                          f"(data.text_pair_column) take {prefix}weighting='tfidf' (or 'binary')")


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
    if config.data.source == "shards":  # its linear probe and report hold the texts in memory
        raise ConfigError("the embed task reads its texts in memory; sharded data (a glob or a folder of shards) is "
                          "for classifiers: give one file with --data, or a data.limit'ed copy of the shards")
    check_preset(config.model.preset, config.preprocessing.sequence_length)


def check_tag_config(config: "PipelineConfig") -> None:
    if config.model.family == "pretrained_tagger":
        check_preset(config.model.preset, config.preprocessing.sequence_length)


def check_answer_config(config: "PipelineConfig") -> None:
    check_preset(config.model.preset, config.preprocessing.sequence_length)
    data = config.data
    if config.training.early_stopping_monitor != "val_loss" and not (data.validation_fraction or data.validation_path):
        raise ConfigError(f"training.early_stopping_monitor='{config.training.early_stopping_monitor}' is scored on "
                          "the validation split, and this pipeline has none: set data.validation_fraction (e.g. 0.1) "
                          "or data.validation_path")


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


# === What each task's trials are scored on (`kpipe tune`) ===

def classify_tuning_metric(config: "PipelineConfig") -> str:
    return "val_micro_f1" if config.data.multi_label else "val_accuracy"  # micro F1: several labels per text


def tag_tuning_metric(config: "PipelineConfig") -> str:
    """Entity F1 on the validation split, logged every epoch when there is one."""
    data = config.data
    return "val_entity_f1" if data.validation_fraction > 0 or data.validation_path else "val_loss"


def answer_tuning_metric(config: "PipelineConfig") -> str:
    """F1 (official SQuAD) on the validation split, logged every epoch when there is one."""
    data = config.data
    return "val_f1" if data.validation_fraction > 0 or data.validation_path else "val_loss"


def translate_tuning_metric(config: "PipelineConfig") -> str:
    """WER or BLEU when the pipeline measures it every epoch, else the loss."""
    monitor = config.training.early_stopping_monitor
    return monitor if monitor in ("val_word_error_rate", "val_bleu") else "val_loss"


def untunable(reason: str) -> Callable[["PipelineConfig"], str]:
    def refuse(config: "PipelineConfig") -> str:
        raise ConfigError(f"{config.task} pipelines {reason}")
    return refuse


TASKS = {spec.name: spec for spec in (
    TaskSpec("answer", QuestionsDataConfig, AnswerPreprocessingConfig, (pretrained_reader.SPEC,),
             "kpipe.tasks.answer.run:run_answer",
             command='kpipe answer EXPORT --question "Who wrote it?" --context "It was written by Ann."',
             tuning_metric=answer_tuning_metric, monitors=("val_f1", "val_exact_match"), check=check_answer_config,
             headline=("test.f1", "test.exact_match", "baseline.test.f1")),
    TaskSpec("classify", TextClassificationDataConfig, TextPreprocessingConfig,
             (rnn_classifier.SPEC, transformer_classifier.SPEC, bag_of_ngrams.SPEC, ensemble.SPEC,
              pretrained_classifier.SPEC),
             "kpipe.tasks.classify.run:run_classify", command='kpipe predict EXPORT "some text"',
             tuning_metric=classify_tuning_metric, monitors=("val_accuracy", "val_micro_f1"),
             trainers={"rnn_classifier": "kpipe.tasks.classify.train_sequence:train_sequence_model",
                       "transformer_classifier": "kpipe.tasks.classify.train_sequence:train_sequence_model",
                       "bag_of_ngrams": "kpipe.tasks.classify.train_ngrams:train_bag_of_ngrams",
                       "pretrained_classifier": "kpipe.tasks.classify.train_pretrained:train_pretrained"},
             check=check_classify_config, headline=("accuracy", "macro_f1", "baseline.accuracy")),
    TaskSpec("embed", TextClassificationDataConfig, TextPreprocessingConfig, (sentence_encoder.SPEC,),
             "kpipe.tasks.embed.run:run_embed", command='kpipe embed EXPORT "some text"',
             tuning_metric=untunable("train nothing (the encoder is used as it is), so there is nothing to tune; "
                                     "tune the classifier that fine-tunes it instead (e.g. kpipe tune sentiment-minilm)"),
             check=check_embed_config, headline=("accuracy", "macro_f1", "baseline.accuracy")),
    TaskSpec("forecast", TimeSeriesDataConfig, WindowConfig, (rnn_forecaster.SPEC,),
             "kpipe.tasks.forecast.run:run_forecast", command="kpipe forecast EXPORT --input recent.csv",
             tuning_metric=lambda config: "val_mae", check=check_forecast_config,
             headline=("test.model.mae", "test.model.mape", "best_baseline", "model_vs_best_baseline_mae")),
    TaskSpec("generate", NamesDataConfig, NamesPreprocessingConfig, (char_rnn.SPEC, char_transformer.SPEC),
             "kpipe.tasks.generate.run:run_generate", command="kpipe generate EXPORT --count 10",
             tuning_metric=lambda config: "val_loss",  # NLL per character
             headline=("test_nll_per_char", "bigram_nll_per_char")),
    TaskSpec("lm", DocumentsDataConfig, LanguageModelPreprocessingConfig, (gpt.SPEC, rnn_lm.SPEC),
             "kpipe.tasks.lm.run:run_lm", command='kpipe generate EXPORT --prompt "In the beginning"',
             tuning_metric=lambda config: "val_loss",  # NLL per token: the tokenizer is fixed by the data
             headline=("test.perplexity_per_word", "baseline.test.perplexity_per_word", "test.bits_per_character")),
    TaskSpec("tag", TaggedDataConfig, TaggingPreprocessingConfig, (rnn_tagger.SPEC, pretrained_tagger.SPEC),
             "kpipe.tasks.tag.run:run_tag", command='kpipe tag EXPORT "Barack Obama visited Paris"',
             tuning_metric=tag_tuning_metric, monitors=("val_entity_f1",), check=check_tag_config,
             headline=("entity_f1", "baseline.feature_crf.entity_f1", "baseline.most_frequent_tag.entity_f1")),
    TaskSpec("translate", PairsDataConfig, PairPreprocessingConfig, (seq2seq_attention.SPEC, seq2seq_transformer.SPEC),
             "kpipe.tasks.translate.run:run_translate", command="kpipe translate EXPORT WORD",
             tuning_metric=translate_tuning_metric, monitors=("val_word_error_rate", "val_bleu"),
             headline=("word_error_rate", "token_error_rate")),
    TaskSpec("word2vec", CorpusDataConfig, SkipGramConfig, (word2vec.SKIPGRAM, word2vec.CBOW),
             "kpipe.tasks.word2vec.run:run_word2vec", command="kpipe neighbors WORD --vectors EXPORT/vectors.txt",
             portable_command="kpipe serve EXPORT (its embed signature: words -> vectors)",
             tuning_metric=untunable("have no validation split to score trials on; tune another pipeline"),
             check=check_word2vec_config, headline=("final_loss", "words_per_second")),
)}


def family_spec(task: str, family: str) -> FamilySpec:
    """The registered family `family` of `task`."""
    return TASKS[task].family(family)


def parse_pipeline_config(raw: Mapping[str, Any]) -> PipelineConfig:
    """Validate a parsed TOML dict into a `PipelineConfig`.

    Raises:
        ConfigError: unknown or missing keys, unknown task or model family, bad values.
    """
    known = {f.name for f in dataclasses.fields(PipelineConfig)}
    raw = {key: value for key, value in raw.items() if key != "tune"}  # the search space: read by `kpipe tune`
    for key in raw:
        if key not in known:
            raise ConfigError(f"unknown key '{key}'{did_you_mean(key, known)}; "
                              f"known top-level keys: {', '.join(sorted(known))}")
    for key in ("name", "task"):
        if not isinstance(raw.get(key), str) or not raw.get(key):
            raise ConfigError(f"missing key '{key}' (a string) at the top of the pipeline config")
    name, task = raw["name"], raw["task"]
    if not NAME_PATTERN.match(name):
        raise ConfigError(f"name must be lowercase letters, digits, '-' or '_'. Received: name={name!r}")
    if task not in TASKS:
        raise ConfigError(f"unknown task '{task}'{did_you_mean(task, TASKS)}; known tasks: {', '.join(TASKS)}")
    spec = TASKS[task]
    sections = {}
    for key in ("data", "preprocessing", "model", "training", "evaluation", "export"):
        value = raw.get(key, {})
        if not isinstance(value, Mapping):
            raise ConfigError(f"'{key}' must be a table ([{key}]). Received: {value!r}")
        sections[key] = value
    family = spec.family_of(sections["model"])
    if family not in spec.models:
        raise ConfigError(f"unknown model.family '{family}'{did_you_mean(str(family), spec.models)} for task "
                          f"'{task}'; known: {', '.join(spec.models)}")
    if not isinstance(raw.get("description", ""), str):
        raise ConfigError("description must be a string")
    config = PipelineConfig(
        name=name, task=task, description=raw.get("description", ""),
        data=from_dict(spec.data, sections["data"], path="data"),
        preprocessing=from_dict(spec.preprocessing, sections["preprocessing"], path="preprocessing"),
        model=from_dict(spec.models[family], sections["model"], path="model"),
        training=from_dict(TrainingConfig, sections["training"], path="training"),
        evaluation=from_dict(EvaluationConfig, sections["evaluation"], path="evaluation"),
        export=from_dict(ExportConfig, sections["export"], path="export"),
    )
    monitor = config.training.early_stopping_monitor
    if monitor != "val_loss" and monitor not in spec.monitors:
        logging_tasks = [other.name for other in TASKS.values() if monitor in other.monitors]
        raise ConfigError(f"training.early_stopping_monitor='{monitor}' is logged by "
                          f"{' and '.join(logging_tasks)} pipelines only, not {task}; use 'val_loss'")
    if config.training.early_stopping_monitor == "val_micro_f1" and not getattr(config.data, "multi_label", False):
        raise ConfigError("training.early_stopping_monitor='val_micro_f1' is logged with several labels per text "
                          "only (data.label_separator or data.label_columns); use 'val_accuracy' or 'val_loss'")
    if config.training.early_stopping_monitor == "val_bleu" and (
            not getattr(config.preprocessing, "sentences", False) or not config.evaluation.bleu_sample):
        raise ConfigError("training.early_stopping_monitor='val_bleu' is logged for sentences only (both "
                          "preprocessing.source_tokens and target_tokens 'word' or 'subword', evaluation.bleu_sample "
                          "> 0); use 'val_word_error_rate' or 'val_loss'")
    if config.training.refit_with_validation and task != "forecast":
        raise ConfigError(f"training.refit_with_validation is for forecast pipelines, not {task}; remove it")
    if spec.check:
        spec.check(config)
    return config
