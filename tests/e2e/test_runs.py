"""Runs through the real command: exact resume after kill -9 at several epochs, and concurrent runs."""

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from kpipe.cli.commands import main
from tests.helpers import kpipe_in_process, kpipe_reporting_tensorflow
from tests.made_up_data import synthetic_reviews

pytestmark = pytest.mark.slow

# Early stopping on, with patience 1: label noise makes the validation loss turn, so the resumed
# runs must carry early stopping's best value, wait counter and best weights to end the same.
ARGS = ["run", "imdb-bilstm", "--data", "reviews.csv", "--set", "training.epochs=5",
        "--set", "training.early_stopping_patience=1", "--set", "model.units=[8]", "--set", "model.embedding_dim=8",
        "--set", "preprocessing.vocabulary_size=300", "--set", "training.learning_rate=0.01"]


def start(args, cwd):
    return subprocess.Popen([sys.executable, "-m", "kpipe", *args], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def noisy_reviews(folder, n=1200):
    frame = synthetic_reviews(n, seed=3)
    flip = np.random.default_rng(4).random(n) < 0.3
    frame.loc[flip, "label"] = 1 - frame.loc[flip, "label"]
    frame.to_csv(folder / "reviews.csv", index=False)


def wait_for(predicate, process, seconds=300):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if predicate():
            return
        assert process.poll() is None, process.communicate()[1][-3000:]
        time.sleep(0.05)
    raise AssertionError("timed out")


def outcome(folder, version="1"):
    import keras

    export = folder / "saved_models" / "imdb-bilstm" / version
    metrics = json.loads((export / "metrics.json").read_text())
    history = [{k: v for k, v in h.items() if k != "epoch_seconds"} for h in metrics["history"]]
    weights = keras.saving.load_model(export / "model.keras", compile=False).get_weights()
    return metrics["accuracy"], history, weights


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    folder = tmp_path_factory.mktemp("reference")
    noisy_reviews(folder)
    assert kpipe_in_process(*ARGS, cwd=folder)[0] == 0  # the kills below run the real command
    return outcome(folder)


def test_reference_stops_early(reference):
    _, history, _ = reference
    assert 2 < len(history) < 5, [h["val_loss"] for h in history]  # the kills below land before the stop


def kill_after_epoch(folder, epoch):
    """Start the run and SIGKILL it once a checkpoint of `epoch` or later is on disk."""
    process = start(ARGS, folder)
    work = folder / "saved_models" / "imdb-bilstm" / ".work"
    wait_for(lambda: any(int(p.name[len("epoch-"):]) >= epoch for p in work.glob("*/checkpoints/epoch-*")),
             process)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    assert not (folder / "saved_models" / "imdb-bilstm" / "1").exists()  # no half-written export


def test_kill_9_at_two_epochs_then_rerun_ends_as_the_uninterrupted_run(tmp_path, reference, monkeypatch, caplog):
    noisy_reviews(tmp_path)
    kill_after_epoch(tmp_path, 1)  # the next run takes over the lock this one leaves
    kill_after_epoch(tmp_path, 2)  # ... resumed after epoch 1, killed again after epoch 2
    monkeypatch.chdir(tmp_path)  # the rerun in-process: the killed runs were the real command
    caplog.set_level("INFO")
    assert main(ARGS) == 0
    assert "Resuming after epoch 2" in caplog.text or "Resuming after epoch 3" in caplog.text  # (a kill may
    # land just after the next epoch's checkpoint)
    accuracy, history, weights = outcome(tmp_path)
    ref_accuracy, ref_history, ref_weights = reference
    assert accuracy == ref_accuracy
    assert len(history) == len(ref_history)
    for row, ref_row in zip(history, ref_history):
        assert row == pytest.approx(ref_row, rel=1e-5)
    for w, ref_w in zip(weights, ref_weights):
        np.testing.assert_allclose(w, ref_w, rtol=1e-5, atol=1e-6)


def test_two_configs_run_side_by_side_and_a_second_run_of_a_live_config_stops_at_once(tmp_path):
    """Two seeds of one pipeline train at once, each to its own version; meanwhile a second run of the first
    seed's config stops at once, before TensorFlow loads (one line, exit 2), and the first finishes."""
    noisy_reviews(tmp_path, n=600)
    configs = [ARGS + ["--set", "training.epochs=2", "--set", f"training.seed={seed}"] for seed in (1, 2)]
    runs = [start(args, tmp_path) for args in configs]
    locks = tmp_path / "saved_models" / "imdb-bilstm" / ".locks"
    wait_for(lambda: len(list(locks.glob("*.owner.json"))) == 2, runs[0])
    second = kpipe_reporting_tensorflow(*configs[0], cwd=tmp_path)
    assert second.returncode == 2, second.stderr[-3000:]
    assert second.stdout.strip() == "False"  # stopped before TensorFlow loaded
    assert f"another run of this config is in progress (process {runs[0].pid} " in second.stderr.strip()
    assert len(second.stderr.strip().splitlines()) == 1 and "Traceback" not in second.stderr
    for process in runs:
        _, err = process.communicate(timeout=600)
        assert process.returncode == 0, err[-3000:]
    root = tmp_path / "saved_models" / "imdb-bilstm"
    assert sorted(p.name for p in root.iterdir() if p.name.isdigit()) == ["1", "2"]
    seeds = sorted(json.loads((root / v / "metrics.json").read_text())["history"][0]["loss"] for v in ("1", "2"))
    assert seeds[0] != seeds[1]  # two different models, one per version
