"""Thresholds and figures for several labels per text, pinned against scikit-learn."""

import numpy as np
from sklearn import metrics

from kpipe.evaluation.multi_label import THRESHOLD_GRID, choose_thresholds, multi_label_metrics


def test_each_labels_threshold_is_its_best_f1_on_the_grid():
    rng = np.random.default_rng(0)
    y = (rng.random((300, 4)) < [0.1, 0.3, 0.5, 0.0]).astype(np.float32)
    p = np.clip(y * rng.uniform(0.2, 1.0, y.shape) + rng.uniform(0, 0.6, y.shape), 0, 1).astype(np.float32)
    chosen = choose_thresholds(y, p, fallback=0.4)
    for j in range(3):
        best = max(metrics.f1_score(y[:, j], p[:, j] >= t, zero_division=0) for t in THRESHOLD_GRID)
        assert metrics.f1_score(y[:, j], p[:, j] >= chosen[j], zero_division=0) == best
    assert chosen[3] == np.float32(0.4)  # no positive in validation: the fallback
    assert (choose_thresholds(y, p, per_label=False, fallback=0.5) == np.float32(0.5)).all()


def test_the_figures_are_scikit_learns():
    rng = np.random.default_rng(1)
    y, predicted = rng.random((200, 5)) < 0.3, rng.random((200, 5)) < 0.3
    found = multi_label_metrics(y, predicted, list("abcde"))
    assert found["micro_f1"] == metrics.f1_score(y, predicted, average="micro")
    assert found["macro_f1"] == metrics.f1_score(y, predicted, average="macro")
    assert found["subset_accuracy"] == metrics.accuracy_score(y, predicted)
    assert found["label_cardinality"] == y.sum(axis=1).mean()
    assert found["per_label"]["c"]["support"] == y[:, 2].sum()
    assert found["per_label"]["c"]["recall"] == metrics.recall_score(y[:, 2], predicted[:, 2])
