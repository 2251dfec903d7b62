"""The config of a named pipeline: task, data, preprocessing, model, training, export.

The sections' types depend on the task (and the model section's on `model.family`): each task declares
them in a `TaskSpec`, and `kpipe.tasks.registry.parse_pipeline_config` reads a config with them. Parsing is
strict: see `kpipe.config.strict`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from pathlib import Path
from typing import Any

from kpipe.config.constraints import Checked, at_least, one_of, open_fraction, setting
from kpipe.config.strict import dumps_toml, to_dict
from kpipe.config.training import TrainingConfig

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
class EvaluationConfig(Checked):
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
    baseline_analyzer: str = setting("word", one_of(("word", "char")))
    thresholds: str = setting("per_label", one_of(("per_label", "global")))
    threshold: float = setting(0.5, open_fraction())
    bleu_sample: int = setting(1000, at_least(0))


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
