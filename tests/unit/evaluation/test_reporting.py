import numpy as np

from kpipe.evaluation.classification import classification_metrics
from kpipe.evaluation.reporting import plot_training_curves


def test_metrics_match_hand_computed_values():
    # true:      a a a b b c
    # predicted: a a b b c c
    y_true = np.array([0, 0, 0, 1, 1, 2])
    y_pred = np.array([0, 0, 1, 1, 2, 2])
    m = classification_metrics(y_true, y_pred, ["a", "b", "c"])
    assert m["accuracy"] == 4 / 6
    assert m["confusion_matrix"]["rows_true_columns_predicted"] == [[2, 1, 0], [0, 1, 1], [0, 0, 1]]
    assert m["per_class"]["a"] == {"precision": 1.0, "recall": 2 / 3, "f1": 0.8, "support": 3}
    assert m["per_class"]["b"]["precision"] == 0.5 and m["per_class"]["b"]["recall"] == 0.5
    assert m["per_class"]["c"]["precision"] == 0.5 and m["per_class"]["c"]["recall"] == 1.0
    np.testing.assert_allclose(m["macro_f1"], (0.8 + 0.5 + 2 / 3) / 3)


def test_class_never_predicted_gets_zero_not_nan():
    m = classification_metrics(np.array([0, 1]), np.array([0, 0]), ["x", "y"])
    assert m["per_class"]["y"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 1}


def test_training_curves_png_is_written(tmp_path):
    history = [{"loss": 1.0, "accuracy": 0.5, "val_loss": 1.1, "val_accuracy": 0.4, "epoch_seconds": 3.0},
               {"loss": 0.7, "accuracy": 0.7, "val_loss": 0.9, "val_accuracy": 0.6, "epoch_seconds": 2.0}]
    path = plot_training_curves(history, tmp_path / "curves.png", title="t")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_training_curves_draw_each_ensemble_member_and_validation_only_metrics(tmp_path, monkeypatch):
    """An ensemble's members (rows with "member") are separate lines over their own epochs, and a metric
    measured on validation only (val_word_error_rate) gets its own panel."""
    import kpipe.evaluation.reporting as reporting

    figures = []
    monkeypatch.setattr(reporting, "_save", lambda fig, path, title="": figures.append(fig) or path)
    history = [{"loss": 1.0 - e / 10 - m / 100, "val_loss": 1.1 - e / 10, "val_word_error_rate": 0.5 - e / 10,
                "member": m, "epoch_seconds": 1.0} for m in (1, 2) for e in range(3)]
    plot_training_curves(history, tmp_path / "curves.png")
    panels = {ax.get_title(): ax for ax in figures[0].axes}
    assert sorted(panels) == ["loss", "word_error_rate"]
    lines = {line.get_label(): line for line in panels["loss"].get_lines()}
    assert sorted(lines) == ["train, member 1", "train, member 2", "validation, member 1", "validation, member 2"]
    assert list(lines["train, member 2"].get_xdata()) == [1, 2, 3]
    assert list(lines["train, member 2"].get_ydata()) == [h["loss"] for h in history[3:]]
    assert [line.get_label() for line in panels["word_error_rate"].get_lines()] == [
        "validation, member 1", "validation, member 2"]
