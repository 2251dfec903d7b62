"""Evaluation reports: training-curve, forecast and attention plots, and JSON files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np


def plot_training_curves(history: list[dict[str, float]], path: Path, title: str = "") -> Path:
    """Save a PNG with one panel per metric (loss, accuracy, ...), train and validation per epoch; a metric
    measured on validation only (e.g. `val_word_error_rate`) gets a panel of its own. An ensemble's history
    (rows with a "member" number) is drawn as one pair of lines per member."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    skip = {"learning_rate", "epoch_seconds", "member"}
    keys = list(dict.fromkeys(k for h in history for k in h))
    names = [k for k in keys if not k.startswith("val_") and k not in skip]
    names += [k[4:] for k in keys if k.startswith("val_") and k[4:] not in names and k[4:] not in skip]
    names.sort(key=lambda k: (k != "loss", k))
    groups: dict = {}
    for h in history:
        groups.setdefault(h.get("member"), []).append(h)
    fig, axes = plt.subplots(1, max(1, len(names)), figsize=(5 * max(1, len(names)), 3.6), squeeze=False)
    longest = max((len(rows) for rows in groups.values()), default=0)
    for ax, name in zip(axes[0], names):
        for member, rows in groups.items():
            suffix = "" if member is None else f", member {member}"
            epochs = np.arange(1, len(rows) + 1)
            for key, label in ((name, "train"), (f"val_{name}", "validation")):
                if key in rows[0]:
                    ax.plot(epochs, [h.get(key, np.nan) for h in rows], "o-", label=label + suffix)
        ax.set_xlabel("epoch")
        if longest <= 20:
            ax.set_xticks(np.arange(1, longest + 1))
        ax.set_title(name)
        ax.grid(alpha=0.3)
        ax.legend()
    return _save(fig, path, title)


def _save(fig, path: Path, title: str = "") -> Path:
    import matplotlib.pyplot as plt

    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def write_json(data: Any, path: Path) -> Path:
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def plot_forecasts(examples: list[dict], path: Path, *, title: str = "", ylabel: str = "") -> Path:
    """Save a PNG with one panel per forecast origin: recent history, truth, the model and baselines.

    Each example is {"history_x", "history", "future_x", "truth", "forecasts": {name: values}} and
    optionally "intervals": {label: (lower, upper)}, shaded widest first.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(examples), 1, figsize=(11, 3.2 * len(examples)), squeeze=False)
    for ax, example in zip(axes[:, 0], examples):
        ax.plot(example["history_x"], example["history"], color="0.45", lw=1.2, label="history")
        for (label, (lower, upper)), alpha in zip(example.get("intervals", {}).items(), [0.15, 0.3, 0.45]):
            ax.fill_between(example["future_x"], lower, upper, color="tab:blue", alpha=alpha, lw=0, label=label)
        ax.plot(example["future_x"], example["truth"], color="black", lw=1.8, label="truth")
        for (name, values), style in zip(example["forecasts"].items(), ["-", "--", ":", "-."]):
            ax.plot(example["future_x"], values, style, lw=1.5, label=name)
        ax.axvline(example["future_x"][0], color="0.7", lw=0.8)
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
        ax.set_title(example.get("title", ""), fontsize=10)
    axes[0, 0].legend(ncol=6, fontsize=8, loc="upper left")
    return _save(fig, path, title)


def plot_error_by_horizon(per_step_mae: dict[str, list[float]], path: Path, *, title: str = "",
                          ylabel: str = "MAE") -> Path:
    """Save a PNG of the mean absolute error at each horizon step, one line per forecaster."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4))
    for name, values in per_step_mae.items():
        ax.plot(np.arange(1, len(values) + 1), values, lw=1.6, label=name)
    ax.set_xlabel("horizon step")
    ax.set_ylabel(ylabel)
    values = [v for series in per_step_mae.values() for v in series if v > 0]
    if values and max(values) > 20 * min(values):  # e.g. naive on a daily cycle: keep the others readable
        ax.set_yscale("log")
    ax.grid(alpha=0.3)
    ax.legend()
    return _save(fig, path, title)


def plot_attention(examples: list[tuple[list[str], list[str], np.ndarray]], path: Path, *, title: str = "") -> Path:
    """Save attention heatmaps, one panel per (source tokens, output tokens, weights (out, source)):
    which source positions each output token looked at."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    columns = max(1, min(2, len(examples)))
    rows = max(1, -(-len(examples) // columns))
    fig, axes = plt.subplots(rows, columns, figsize=(5 * columns, 4 * rows), squeeze=False)
    for ax in axes.flat[len(examples):]:
        ax.axis("off")
    for ax, (source, output, weights) in zip(axes.flat, examples):
        shown = np.asarray(weights)[:max(1, len(output)), :max(1, len(source))]
        ax.imshow(shown, cmap="viridis", vmin=0.0, vmax=1.0, aspect="auto")
        ax.set_xticks(range(len(source)), source, fontsize=8)
        ax.set_yticks(range(len(output)), output, fontsize=8)
        ax.set_xlabel("source")
        ax.set_ylabel("output")
    return _save(fig, path, title or "attention weights")
