"""`make_objective` with the run stubbed (no training): each epoch's validation figure reaches the pruner, which
stops a hopeless trial after its first epoch, but never after its last epoch, nor the trial of the pipeline's own
values (the reference the search is there to beat). The pruners themselves: test_pruners.py."""

import types

import pytest

from kpipe.tuning.space import parse_space
from kpipe.tuning.study import make_objective, make_pruner


def stub_run(config):
    """Epochs of a run without training: a learning rate of 100 is hopeless (accuracy 0.3), others improve."""
    from kpipe.training import loop

    hopeless = config.training.learning_rate > 1
    history = []
    watchers = loop._WATCHERS.get()  # noqa: SLF001  (the callbacks `watching` adds to every training)
    for watcher in watchers:
        watcher.set_params({"epochs": config.training.epochs})
    for epoch in range(config.training.epochs):
        logs = {"val_accuracy": 0.3 if hopeless else 0.8 + 0.05 * epoch, "val_loss": 1.0}
        history.append(logs)
        for watcher in watchers:
            watcher.on_epoch_end(epoch, logs)
    return types.SimpleNamespace(metrics={"history": history}, export_dir=config.export.dir)


def test_a_hopeless_trial_is_pruned_after_its_first_epoch_but_never_after_its_last(tmp_path, monkeypatch):
    optuna = pytest.importorskip("optuna")
    import kpipe.tasks.runner

    monkeypatch.setattr(kpipe.tasks.runner, "run_pipeline", stub_run)
    dimensions = parse_space({"training.learning_rate": [0.001, 100.0], "training.epochs": [3, 1]}, source="test")
    study = optuna.create_study(direction="maximize", pruner=make_pruner("median"))
    for lr, epochs in ((0, 0), (0, 0), (1, 0), (1, 1)):
        study.enqueue_trial({"training.learning_rate": lr, "training.epochs": epochs})
    study.enqueue_trial({"training.learning_rate": 1, "training.epochs": 0}, user_attrs={"defaults": True})
    study.optimize(make_objective("sentiment-bigrams", ["training.early_stopping_patience=0"], dimensions,
                                  "val_accuracy", tmp_path / "t"), n_trials=5)
    assert [t.state.name for t in study.trials] == ["COMPLETE", "COMPLETE", "PRUNED", "COMPLETE", "COMPLETE"]
    assert [t.user_attrs["epochs"] for t in study.trials] == [3, 3, 1, 1, 3]
    assert study.trials[0].value == pytest.approx(0.9) and study.trials[3].value == pytest.approx(0.3)
