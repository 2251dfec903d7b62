"""The simple models every classifier is measured against, on the same split in the same run, and the table
that shows them side by side.
"""

from __future__ import annotations

from kpipe.datasets.text_classification import TextSplits
from kpipe.evaluation import multi_label, tfidf_baseline
from kpipe.evaluation.classification import classification_metrics
from kpipe.evaluation.multi_label import multi_label_metrics


def tfidf_baseline_metrics(splits: TextSplits) -> dict:
    """The TF-IDF + logistic regression baseline on the same splits: its test metrics and settings."""
    result = tfidf_baseline.fit_and_predict(splits.train.texts, splits.train.labels, splits.validation.texts,
                                            splits.validation.labels, splits.test.texts)
    scores = classification_metrics(splits.test.labels, result.predicted, splits.label_names)
    return {**result.report(), "accuracy": scores["accuracy"], "macro_f1": scores["macro_f1"]}


def out_of_core_baseline_metrics(splits, seed: int = 0) -> dict:
    """scikit-learn's out-of-core recipe (hashing + SGD, see `out_of_core_baseline`) on streamed splits: every
    split read from the shards, never held whole."""
    import numpy as np

    from kpipe.evaluation import out_of_core_baseline as ooc

    every = splits.validation.source  # all shards, whichever worker this is
    result = ooc.fit_and_predict(*(ooc.text_batches(every.split_batches(split))
                                   for split in ("train", "validation", "test")),
                                 classes=np.arange(splits.num_classes), seed=seed)
    scores = classification_metrics(result.labels, result.predicted, splits.label_names)
    return {**result.report(), "accuracy": scores["accuracy"], "macro_f1": scores["macro_f1"]}


def one_vs_rest_metrics(splits: TextSplits, analyzer: str) -> dict:
    """The one-vs-rest TF-IDF + logistic regression baseline on the same splits: its test metrics and settings."""
    result = multi_label.one_vs_rest_baseline(splits.train.texts, splits.train.labels, splits.validation.texts,
                                              splits.validation.labels, splits.test.texts, analyzer=analyzer)
    scores = multi_label_metrics(splits.test.labels, result.predicted, splits.label_names)
    return {**result.report(), **{k: scores[k] for k in ("micro_f1", "macro_f1", "subset_accuracy")}}


# How the run's table names each baseline (metrics.json keeps the `name` its report gives; the out-of-core one's
# name is already what the table shows).
DISPLAY_NAMES = {"tfidf_logistic_regression": "tfidf + logistic regression",
                 "one_vs_rest_tfidf_logistic_regression": "one-vs-rest tfidf + logistic"}


def comparison_table(metrics: dict) -> str:
    """The model beside the baseline (when there is one), as the run prints it."""
    baseline = metrics.get("baseline") or {}
    baseline_name = DISPLAY_NAMES.get(baseline.get("name"), baseline.get("name") or "baseline")
    rows = [("model", metrics)] + ([(baseline_name, metrics["baseline"])] if metrics.get("baseline") else [])
    if "micro_f1" in metrics:  # several labels per text
        lines = [f"{'classifier':30s} {'micro F1':>9s} {'macro F1':>9s} {'subset acc':>10s}"]
        lines += [f"{name:30s} {row['micro_f1']:9.4f} {row['macro_f1']:9.4f} {row['subset_accuracy']:10.4f}"
                  for name, row in rows]
        return "\n".join(lines)
    width = max(30, *(len(name) for name, _ in rows))
    lines = [f"{'classifier':{width}s} {'accuracy':>9s} {'macro F1':>9s}"]
    lines += [f"{name:{width}s} {row['accuracy']:9.4f} {row['macro_f1']:9.4f}" for name, row in rows]
    return "\n".join(lines)
