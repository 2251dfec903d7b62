"""Several labels per text: decision thresholds chosen on validation, the report's figures, and the
one-vs-rest TF-IDF + logistic regression baseline (scikit-learn) on the same split.

Thresholds: for each label, the one in THRESHOLD_GRID with the best F1 of that label on the
validation split (ties to the one nearest 0.5; a label with no positive in validation keeps the
fallback), or one global threshold for all labels (`evaluation.thresholds = "global"`).
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any, Sequence

import numpy as np

from kpipe.evaluation.text_blocks import TextBlocks

THRESHOLD_GRID = np.round(np.arange(0.05, 0.951, 0.05), 2).astype(np.float32)  # compared in float32, as served
C_GRID = (1.0, 4.0, 16.0, 64.0)


def choose_thresholds(y_true: np.ndarray, probabilities: np.ndarray, *, per_label: bool = True,
                      fallback: float = 0.5) -> np.ndarray:
    """(labels,) thresholds: each label's best-F1 threshold on (`y_true`, `probabilities`), or `fallback`."""
    labels = y_true.shape[1]
    if not per_label or not len(y_true):
        return np.full(labels, fallback, np.float32)
    chosen = np.full(labels, fallback, np.float32)
    for j in range(labels):
        positives = y_true[:, j] > 0.5
        if not positives.any():
            continue
        predicted = probabilities[:, j].astype(np.float32)[None, :] >= THRESHOLD_GRID[:, None]  # (grid, rows)
        tp = (predicted & positives).sum(axis=1)
        f1 = 2 * tp / np.maximum(predicted.sum(axis=1) + positives.sum(), 1)
        best = max(range(len(THRESHOLD_GRID)), key=lambda k: (f1[k], -abs(THRESHOLD_GRID[k] - 0.5)))
        chosen[j] = THRESHOLD_GRID[best]
    return chosen


def multi_label_metrics(y_true: np.ndarray, y_pred: np.ndarray, label_names: Sequence[str]) -> dict[str, Any]:
    """micro and macro F1, subset accuracy, Hamming loss, per-label precision/recall/F1/support and the label
    cardinality (true and predicted), through scikit-learn (`zero_division=0`)."""
    from sklearn import metrics

    y_true, y_pred = np.asarray(y_true) > 0.5, np.asarray(y_pred) > 0.5
    precision, recall, f1, support = metrics.precision_recall_fscore_support(y_true, y_pred, zero_division=0)
    return {
        "micro_f1": float(metrics.f1_score(y_true, y_pred, average="micro", zero_division=0)),
        "macro_f1": float(metrics.f1_score(y_true, y_pred, average="macro", zero_division=0)),
        "subset_accuracy": float(metrics.accuracy_score(y_true, y_pred)) if len(y_true) else 0.0,
        "hamming_loss": float(metrics.hamming_loss(y_true, y_pred)) if len(y_true) else 0.0,
        "label_cardinality": float(y_true.sum(axis=1).mean()) if len(y_true) else 0.0,
        "predicted_cardinality": float(y_pred.sum(axis=1).mean()) if len(y_pred) else 0.0,
        "per_label": {name: {"precision": float(p), "recall": float(r), "f1": float(f), "support": int(s)}
                      for name, p, r, f, s in zip(label_names, precision, recall, f1, support)},
    }


@dataclasses.dataclass(frozen=True)
class OneVsRestResult:
    predicted: np.ndarray   # (test rows, labels) 0/1
    C: float
    thresholds: np.ndarray
    validation_micro_f1: dict
    analyzer: str
    ngram_range: tuple[int, int]
    fit_seconds: float

    def report(self) -> dict:
        return {"name": "one_vs_rest_tfidf_logistic_regression", "analyzer": self.analyzer,
                "ngram_range": list(self.ngram_range), "C": self.C,
                "validation_micro_f1_by_C": {str(c): f for c, f in self.validation_micro_f1.items()},
                "thresholds": "per label, chosen on validation", "fit_seconds": round(self.fit_seconds, 2)}


def one_vs_rest_baseline(train_texts, train_labels, validation_texts, validation_labels, test_texts, *,
                         analyzer: str = "word", c_grid=C_GRID) -> OneVsRestResult:
    """One logistic regression per label on TF-IDF n-grams (words 1-2, or characters 1-4 with
    `analyzer="char"`): C and each label's threshold chosen on validation (micro F1), test predicted."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.multiclass import OneVsRestClassifier

    started = time.perf_counter()
    ngram_range = (1, 4) if analyzer == "char" else (1, 2)
    vectorizer = TextBlocks(lambda: TfidfVectorizer(analyzer="char_wb" if analyzer == "char" else "word",
                                                    ngram_range=ngram_range, min_df=2, sublinear_tf=True,
                                                    strip_accents="unicode"))
    train_x = vectorizer.fit_transform(train_texts)  # one block per text of a pair
    train_y = np.asarray(train_labels) > 0.5
    always = train_y.all(axis=0) | ~train_y.any(axis=0)  # a label on every (or no) training text: nothing to fit

    def fit(c):
        return OneVsRestClassifier(LogisticRegression(C=c, max_iter=2000)).fit(train_x, train_y[:, ~always])

    def probabilities(model, x) -> np.ndarray:
        out = np.tile(train_y[0].astype(np.float32), (x.shape[0], 1))
        out[:, ~always] = model.predict_proba(x)
        return out

    validation_x = vectorizer.transform(validation_texts)
    models, scores, thresholds = {}, {}, {}
    for c in c_grid:
        models[c] = fit(c)
        probs = probabilities(models[c], validation_x)
        thresholds[c] = choose_thresholds(np.asarray(validation_labels), probs)
        scores[c] = multi_label_metrics(validation_labels, probs >= thresholds[c], [])["micro_f1"]
    best = max(c_grid, key=lambda c: (scores[c], -c))
    predicted = probabilities(models[best], vectorizer.transform(test_texts)) >= thresholds[best]
    return OneVsRestResult(predicted.astype(np.int8), best, thresholds[best], scores, analyzer, ngram_range,
                           time.perf_counter() - started)
