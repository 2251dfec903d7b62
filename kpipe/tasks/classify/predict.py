"""Predicting with an exported classifier: raw strings (or pairs) in, labels and probabilities out. Imports
no training code, so `kpipe predict` loads only what the export needs.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Callable, Sequence

import tensorflow as tf

from kpipe.cache import keep_xla_programs
from kpipe.portable.export_files import LABELS_FILE
from kpipe.exports.open import call_in_batches, open_export


@dataclasses.dataclass(frozen=True)
class Prediction:
    """One classified text: the top label, its probability, and every class's probability. With several labels
    per text: `labels` over their thresholds, `label` those joined by the export's separator, `probability` the
    highest label probability."""

    text: str
    label: str
    probability: float
    probabilities: dict[str, float]
    labels: tuple[str, ...] | None = None  # several labels per text only
    text_pair: str | None = None  # the second text, for a pair model


def load_classifier(model: str | Path, export_dir: str | Path = "saved_models"):
    """Load an exported classifier (a version folder, a folder of versions, or a pipeline name).

    Returns:
        (loaded SavedModel, label names in column order of its probabilities).
    """
    keep_xla_programs()  # before the export's compiled members first compile
    opened = open_export(model, task="classify", command="kpipe predict", export_dir=export_dir)
    return opened.loaded, (opened.path / LABELS_FILE).read_text(encoding="utf-8").splitlines()


def predict_texts(model: str | Path, texts: Sequence[str], export_dir: str | Path = "saved_models",
                  batch_size: int = 256, on_batch: Callable[[int], object] | None = None,
                  pairs: Sequence[str] | None = None) -> list[Prediction]:
    """Classify raw strings (or pairs of them: `texts[i]` with `pairs[i]`) with an exported model.

    Args:
        model: a version folder, a folder of versions (latest taken) or a pipeline name.
        texts: the raw strings.
        export_dir: where pipeline names are looked up.
        batch_size: strings per call to the model.
        on_batch: called with the batch's size after each batch (e.g. a progress bar's `update`).
        pairs: the second texts, for a model trained on pairs of texts (its `serve` takes `text_pair`).

    Example:
        >>> predict_texts("sentiment-bilstm", ["@united thanks, great flight!"])[0].label
        'positive'
    """
    return load_predictor(model, export_dir)(texts, batch_size=batch_size, on_batch=on_batch, pairs=pairs)


def load_predictor(model: str | Path, export_dir: str | Path = "saved_models"):
    """`predict_texts` with the export loaded once: a function (texts, batch_size=256, on_batch=None, pairs=None)
    -> list of `Prediction`, for callers that answer many batches (sharded batch prediction)."""
    loaded, label_names = load_classifier(model, export_dir)

    def predict_all(texts: Sequence[str], batch_size: int = 256, on_batch: Callable[[int], object] | None = None,
                    pairs: Sequence[str] | None = None) -> list[Prediction]:
        if pairs is not None and len(pairs) != len(texts):
            raise ValueError(f"{len(texts)} texts and {len(pairs)} second texts: give one second text per text")
        rows = list(zip(texts, pairs)) if pairs is not None else [(text, None) for text in texts]

        def predict(batch: Sequence[tuple[str, str | None]]) -> list[Prediction]:
            first = tf.constant([a for a, _ in batch], tf.string)
            out = loaded.serve(first) if pairs is None else loaded.serve(first, tf.constant([b for _, b in batch]))
            if "predicted" in out:  # several labels per text
                return [Prediction(text, joined.decode("utf-8"), float(row.max()),
                                   {name: float(p) for name, p in zip(label_names, row)},
                                   tuple(name for name, on in zip(label_names, chosen) if on), second)
                        for (text, second), joined, row, chosen in zip(batch, out["labels"].numpy(),
                                                                       out["probabilities"].numpy(),
                                                                       out["predicted"].numpy())]
            labels = [label.decode("utf-8") for label in out["label"].numpy()]
            return [Prediction(text, label, float(row.max()), {name: float(p) for name, p in zip(label_names, row)},
                               text_pair=second)
                    for (text, second), label, row in zip(batch, labels, out["probabilities"].numpy())]

        return [p for batch in call_in_batches(predict, rows, batch_size=batch_size, on_batch=on_batch) for p in batch]

    return predict_all
