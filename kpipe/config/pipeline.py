"""The config of a named pipeline: task, data, preprocessing, model, training, export.

The sections' types depend on the task (and the model section's on `model.family`); each task
declares them in a `TaskSpec` (see `kpipe.config.tasks`). Parsing is strict: see `kpipe.config.strict`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from pathlib import Path
from typing import Any, Mapping

from kpipe.config.strict import check_choice, check_range, did_you_mean, dumps_toml, from_dict, to_dict
from kpipe.errors import ConfigError
from kpipe.config.tasks import TASKS
from kpipe.config.training import EARLY_STOPPING_MONITORS, TrainingConfig

NAME_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_-]*$")


@dataclasses.dataclass(frozen=True, kw_only=True)
class ExportConfig:
    """Where exports go: `<dir>/<pipeline name>/<version>/`.

    Args:
        dir: root folder of exports, relative to the working directory.
    """

    dir: str = "saved_models"

    def __post_init__(self):
        if not self.dir:
            raise ValueError("`dir` must not be empty. Received: dir=''")


@dataclasses.dataclass(frozen=True, kw_only=True)
class EvaluationConfig:
    """What the model is measured against, on the same split in the same run.

    Args:
        baseline: also fit the simple models a user would try instead, on the same split, and report
            them beside the model: for text classifiers TF-IDF (1-2 grams) + logistic regression, for
            forecasters MSTL and AutoETS (statsforecast; naive and seasonal naive are always there).
            Turn off for data too big for them. With several labels per text: one-vs-rest TF-IDF +
            logistic regression, its C and per-label thresholds chosen on validation.
        baseline_analyzer: the text baseline's n-grams: "word" (1-2 grams) or "char" (1-4 grams, for
            single words such as names).
        thresholds: several labels per text: "per_label" (each label's best-F1 threshold on validation)
            or "global" (`threshold` for every label).
        threshold: the global decision threshold, and the fallback of a label without a positive example
            in validation.
        bleu_sample: translations of sentences: validation sources decoded after every epoch for `val_bleu`
            (the first ones of the split, the same every epoch; 0 = no BLEU during training).
    """

    baseline: bool = True
    baseline_analyzer: str = "word"
    thresholds: str = "per_label"
    threshold: float = 0.5
    bleu_sample: int = 1000

    def __post_init__(self):
        check_choice("baseline_analyzer", self.baseline_analyzer, ("word", "char"))
        check_choice("thresholds", self.thresholds, ("per_label", "global"))
        check_range("threshold", self.threshold, low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
        check_range("bleu_sample", self.bleu_sample, low=0)


@dataclasses.dataclass(frozen=True)
class RunResult:
    """What a pipeline run produced: the export folder, the test metrics, and a short summary."""

    export_dir: Path
    metrics: dict[str, Any]
    summary: str


@dataclasses.dataclass(frozen=True, kw_only=True)
class PipelineConfig:
    """A fully validated pipeline config (one TOML file plus overrides)."""

    name: str
    task: str
    description: str = ""
    data: Any
    preprocessing: Any
    model: Any
    training: TrainingConfig = TrainingConfig()
    evaluation: EvaluationConfig = EvaluationConfig()
    export: ExportConfig = ExportConfig()

    def to_dict(self) -> dict[str, Any]:
        return to_dict(self)

    def to_toml(self) -> str:
        return dumps_toml(self.to_dict())

    def fingerprint(self) -> str:
        """A short hash of the resolved config: same config, same fingerprint (names resume state)."""
        return hashlib.sha256(self.to_toml().encode()).hexdigest()[:12]


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
    family = sections["model"].get("family", next(iter(spec.models)))
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
    tasks = EARLY_STOPPING_MONITORS[config.training.early_stopping_monitor]
    if tasks and task not in tasks:
        raise ConfigError(f"training.early_stopping_monitor='{config.training.early_stopping_monitor}' is logged by "
                          f"{' and '.join(tasks)} pipelines only, not {task}; use 'val_loss'")
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
