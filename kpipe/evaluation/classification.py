"""Classification metrics, computed by scikit-learn: accuracy, per-class precision/recall/F1/support,
macro F1 and the confusion matrix, as every classify report holds them."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np


def classification_metrics(y_true: np.ndarray, y_pred: np.ndarray, label_names: Sequence[str]) -> dict[str, Any]:
    """The report's classification figures. A class never predicted gets precision 0 (and never present,
    recall 0): scikit-learn's `zero_division=0`. Every class in `label_names` has a row, seen or not.
    """
    from sklearn import metrics

    labels = np.arange(len(label_names))
    precision, recall, f1, support = metrics.precision_recall_fscore_support(y_true, y_pred, labels=labels,
                                                                             zero_division=0)
    matrix = metrics.confusion_matrix(y_true, y_pred, labels=labels)
    return {
        "accuracy": float(metrics.accuracy_score(y_true, y_pred)) if len(y_true) else 0.0,
        "macro_f1": float(np.mean(f1)),
        "per_class": {name: {"precision": float(p), "recall": float(r), "f1": float(f), "support": int(s)}
                      for name, p, r, f, s in zip(label_names, precision, recall, f1, support)},
        "confusion_matrix": {"labels": list(label_names), "rows_true_columns_predicted": matrix.tolist()},
    }
