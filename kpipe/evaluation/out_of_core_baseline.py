"""The baseline for data too big for scikit-learn's in-memory TF-IDF: its own out-of-core recipe.

scikit-learn's "out-of-core classification of text documents" example: a `HashingVectorizer` (no vocabulary to
hold; word 1-2 grams, l2-normalized, non-negative counts) and a linear model trained by `partial_fit` one batch
at a time, here `SGDClassifier` with the logistic loss. The regularization `alpha` is chosen on the validation
split among `ALPHA_GRID` (all of them trained in the same pass over the training stream), then the test split
is scored: three passes over the shards in all, memory bounded by a batch and the models' weights.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Iterable, Iterator

import numpy as np

ALPHA_GRID = (1e-5, 1e-6, 1e-7)
HASHED_FEATURES = 1 << 20
NAME = "hashing + SGD logistic (out-of-core)"


@dataclasses.dataclass
class OutOfCoreResult:
    predicted: np.ndarray
    labels: np.ndarray
    alpha: float
    validation_scores: dict
    seconds: float
    rows_seen: int

    def report(self) -> dict:
        return {"name": NAME, "alpha": self.alpha, "validation_accuracy": self.validation_scores,
                "seconds": round(self.seconds, 2), "training_rows": self.rows_seen,
                "recipe": "HashingVectorizer(ngram_range=(1, 2), n_features=2**20, alternate_sign=False) + "
                          "SGDClassifier(loss='log_loss').partial_fit, one pass"}


def fit_and_predict(train: Iterable[tuple[list[str], np.ndarray]], validation: Iterable[tuple[list[str], np.ndarray]],
                    test: Iterable[tuple[list[str], np.ndarray]], classes: np.ndarray, *,
                    alpha_grid=ALPHA_GRID, seed: int = 0) -> OutOfCoreResult:
    """Train one model per alpha over the `train` batches (texts, label ids), pick the best on `validation`,
    predict `test`. Batches are iterables of (texts, labels); each is read once."""
    from sklearn.feature_extraction.text import HashingVectorizer
    from sklearn.linear_model import SGDClassifier

    started = time.perf_counter()
    vectorizer = HashingVectorizer(ngram_range=(1, 2), n_features=HASHED_FEATURES, alternate_sign=False,
                                   strip_accents="unicode")
    models = {alpha: SGDClassifier(loss="log_loss", alpha=alpha, random_state=seed) for alpha in alpha_grid}
    seen = 0
    for texts, labels in train:
        features = vectorizer.transform(texts)
        for model in models.values():
            model.partial_fit(features, labels, classes=classes)
        seen += len(labels)
    correct = dict.fromkeys(alpha_grid, 0)
    total = 0
    for texts, labels in validation:
        features = vectorizer.transform(texts)
        for alpha, model in models.items():
            correct[alpha] += int((model.predict(features) == labels).sum())
        total += len(labels)
    scores = {alpha: correct[alpha] / total for alpha in alpha_grid} if total else {}
    best = max(alpha_grid, key=lambda a: (scores.get(a, 0.0), a))  # ties: the stronger regularization
    predicted, truth = [], []
    for texts, labels in test:
        predicted.append(models[best].predict(vectorizer.transform(texts)))
        truth.append(labels)
    return OutOfCoreResult(np.concatenate(predicted), np.concatenate(truth), best,
                           {str(a): round(s, 4) for a, s in scores.items()}, time.perf_counter() - started, seen)


def text_batches(rows: Iterator[tuple[np.ndarray, np.ndarray]]) -> Iterator[tuple[list[str], np.ndarray]]:
    """Batches of (bytes texts, labels) as scikit-learn's vectorizers take them: (str texts, labels)."""
    for texts, labels in rows:
        yield [t.decode("utf-8") if isinstance(t, bytes) else str(t) for t in texts], labels
