"""Text classification end to end: data -> features -> tf.data -> model(s) -> report -> SavedModel.

Families: a (Bi)LSTM/GRU on token ids, a transformer encoder on WordPiece sub-words, a linear or
one-hidden-layer model on bag-of-n-grams features, a pretrained encoder, and ensembles of them (each
family's trainer is a `train_*.py` module, the ensemble's weighing in `ensemble.py`). Every run reports the model
beside the TF-IDF + logistic regression baseline on the same split (`baselines.py`); the export is written
by `signatures.py`.
"""

from __future__ import annotations

import logging

import numpy as np

from kpipe.cache import keep_xla_programs
from kpipe.config.pipeline import PipelineConfig, RunResult
from kpipe.datasets.text_classification import TextSplits, load_text_classification
from kpipe.evaluation.classification import classification_metrics
from kpipe.evaluation.multi_label import choose_thresholds, multi_label_metrics
from kpipe.families.ensemble.config import EnsembleClassifierConfig
from kpipe.tasks.classify.baselines import (
    comparison_table,
    one_vs_rest_metrics,
    out_of_core_baseline_metrics,
    tfidf_baseline_metrics,
)
from kpipe.tasks.classify.ensemble import train_ensemble
from kpipe.tasks.classify.members import Member, train_member
from kpipe.tasks.classify.signatures import write_classifier_export
from kpipe.training.run import Run

log = logging.getLogger(__name__)


def run_classify(config: PipelineConfig) -> RunResult:
    """Train, evaluate and export a text classifier as described by `config`.

    Returns:
        The export folder and the test metrics (also in `<export>/metrics.json`).
    """
    keep_xla_programs()  # the compiled members compile once per batch size, then never again on this machine
    with Run(config) as run:
        return _run_classify(run, config)


def _run_classify(run: Run, config: PipelineConfig) -> RunResult:
    splits: TextSplits = load_text_classification(config.data, worker=run.worker(),
                                                      cache_dir=run.export_root / ".cache")
    members, weights, ensemble_report = train(run, config, splits)
    metrics, thresholds = score_test_split(config, splits, members, weights)
    metrics.update({
        **run.common_metrics([h for member in members for h in member.history]),
        "data": {"source": config.data.describe(), "train": len(splits.train),
                 "validation": len(splits.validation), "test": len(splits.test),
                 **(splits.report() if splits.streamed else {})},
        **members[-1].report,
        **({"ensemble": ensemble_report} if ensemble_report else {}),
    })
    if config.evaluation.baseline:
        metrics["baseline"] = (one_vs_rest_metrics(splits, config.evaluation.baseline_analyzer) if splits.multi_label
                               else out_of_core_baseline_metrics(splits, config.training.seed) if splits.streamed
                               else tfidf_baseline_metrics(splits))
    log.info("Test on %d examples:\n%s", len(splits.test), comparison_table(metrics))
    version_dir = run.publish(lambda folder: write_classifier_export(
        folder, members=members, weights=weights, config=config, label_names=splits.label_names, metrics=metrics,
        work_dir=run.work_dir, thresholds=thresholds),
        data=(splits.scan.fingerprint_parts() if splits.streamed
              else (splits.train.texts.tolist(), splits.train.labels.tolist())))
    return RunResult(version_dir, metrics, summary_text(metrics, splits, version_dir))


# === Stages ===

def train(run: Run, config: PipelineConfig, splits: TextSplits) -> tuple[list[Member], list[float], dict | None]:
    """The model: one member, or an ensemble's members and their weights (chosen on validation)."""
    if isinstance(config.model, EnsembleClassifierConfig):
        return train_ensemble(run, config, splits)
    return [train_member(run, config.model, splits, config.preprocessing)], [1.0], None


def score_test_split(config: PipelineConfig, splits: TextSplits, members: list[Member],
                     weights: list[float]) -> tuple[dict, np.ndarray | None]:
    """The test split's metrics, in its original order; with several labels per text, each label's threshold is
    chosen on validation first, then the test split is scored with them: (metrics, thresholds or None)."""
    probabilities = sum(w * m.probabilities(splits.test.texts, splits.test.labels) for m, w in zip(members, weights))
    if not splits.multi_label:
        return classification_metrics(splits.test.labels, probabilities.argmax(axis=1), splits.label_names), None
    validation = sum(w * m.probabilities(splits.validation.texts, splits.validation.labels)
                     for m, w in zip(members, weights))
    thresholds = choose_thresholds(splits.validation.labels, validation, fallback=config.evaluation.threshold,
                                   per_label=config.evaluation.thresholds == "per_label")
    metrics = multi_label_metrics(splits.test.labels, probabilities >= thresholds, splits.label_names)
    metrics["thresholds"] = {name: round(float(t), 4) for name, t in zip(splits.label_names, thresholds)}
    return metrics, thresholds


def summary_text(metrics: dict, splits: TextSplits, version_dir) -> str:
    return (f"Test on {len(splits.test)} examples:\n{comparison_table(metrics)}\nExported to {version_dir} "
            f"(report: metrics.json, training_curves.png)\n"
            + (f'Try: kpipe predict {version_dir} --pair "first text" "second text"' if splits.pairs
               else f'Try: kpipe predict {version_dir} "your text here"'))
