"""Evaluation reports: classification metrics computed in NumPy, training-curve plots, JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

import numpy as np


def confusion_matrix(y_true: np.ndarray, y_pred: np.ndarray, num_classes: int) -> np.ndarray:
    """(num_classes, num_classes) counts; row = true class, column = predicted class."""
    matrix = np.zeros((num_classes, num_classes), dtype=np.int64)
    np.add.at(matrix, (np.asarray(y_true, int), np.asarray(y_pred, int)), 1)
    return matrix


def classification_metrics(y_true: np.ndarray, y_pred: np.ndarray, label_names: Sequence[str]) -> dict[str, Any]:
    """Accuracy, per-class precision/recall/F1/support, macro F1 and the confusion matrix.

    A class never predicted gets precision 0 (and never present, recall 0), as scikit-learn's
    `zero_division=0` does.
    """
    matrix = confusion_matrix(y_true, y_pred, len(label_names))
    true_pos = np.diag(matrix).astype(float)
    predicted = matrix.sum(axis=0)
    actual = matrix.sum(axis=1)
    precision = np.divide(true_pos, predicted, out=np.zeros_like(true_pos), where=predicted > 0)
    recall = np.divide(true_pos, actual, out=np.zeros_like(true_pos), where=actual > 0)
    f1 = np.divide(2 * precision * recall, precision + recall, out=np.zeros_like(true_pos),
                   where=(precision + recall) > 0)
    return {
        "accuracy": float(true_pos.sum() / max(1, matrix.sum())),
        "macro_f1": float(f1.mean()),
        "per_class": {name: {"precision": float(p), "recall": float(r), "f1": float(f), "support": int(s)}
                      for name, p, r, f, s in zip(label_names, precision, recall, f1, actual)},
        "confusion_matrix": {"labels": list(label_names), "rows_true_columns_predicted": matrix.tolist()},
    }


def plot_training_curves(history: list[dict[str, float]], path: Path, title: str = "") -> Path:
    """Save a PNG with one panel per metric (loss, accuracy, ...), train and validation per epoch."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    skip = {"learning_rate", "epoch_seconds"}
    names = sorted((k for k in (history[0] if history else {}) if not k.startswith("val_") and k not in skip),
                   key=lambda k: (k != "loss", k))
    fig, axes = plt.subplots(1, max(1, len(names)), figsize=(5 * max(1, len(names)), 3.6), squeeze=False)
    epochs = np.arange(1, len(history) + 1)
    for ax, name in zip(axes[0], names):
        ax.plot(epochs, [h[name] for h in history], "o-", label="train")
        if f"val_{name}" in history[0]:
            ax.plot(epochs, [h[f"val_{name}"] for h in history], "o-", label="validation")
        ax.set_xlabel("epoch")
        ax.set_xticks(epochs)
        ax.set_title(name)
        ax.grid(alpha=0.3)
        ax.legend()
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def write_json(data: Any, path: Path) -> Path:
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path
