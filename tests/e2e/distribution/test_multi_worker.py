"""MultiWorkerMirroredStrategy for real: two worker processes on 127.0.0.1 with TF_CONFIG."""

import json
import os
import runpy
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from kpipe.cli.commands import main
from tests.clusters import finish, free_ports, start_workers, tf_config_env
from tests.helpers import kpipe_reporting_tensorflow

pytestmark = pytest.mark.slow  # real worker processes: tens of seconds each

WORKER = Path(__file__).with_name("worker.py")


def load_weights(path):
    with np.load(path) as f:
        return [f[k] for k in sorted(f.files, key=lambda k: int(k.split("_")[1]))]


def test_two_workers_stopped_and_rerun_end_with_the_weights_of_one_uninterrupted_process(tmp_path, monkeypatch):
    """Each worker takes half of every global batch; summed gradients of the two halves' mean losses equal the full
    batch's, so the result matches plain single-process training. Here across a stop: both workers stop after their
    second epoch, and the rerun resumes both from the chief's backup (the other worker reads it), so the two
    clusters together end where one process training all four epochs does."""
    for rc, _, err in finish(start_workers([sys.executable, str(WORKER), str(tmp_path), "4", "1"], tmp_path)):
        assert rc == 0, err[-3000:]
    assert json.loads((tmp_path / "crashed-0.json").read_text()) == [0, 1]
    assert json.loads((tmp_path / "crashed-1.json").read_text()) == [0, 1]
    for rc, _, err in finish(start_workers([sys.executable, str(WORKER), str(tmp_path), "4"], tmp_path)):
        assert rc == 0, err[-3000:]
    infos = [json.loads((tmp_path / f"epochs-{i}.json").read_text()) for i in (0, 1)]
    for info in infos:  # both resumed at epoch 2
        assert info["ran"] == [2, 3]
    # The single-process reference: the same script in this process (no TF_CONFIG: the default strategy).
    monkeypatch.delenv("TF_CONFIG", raising=False)
    monkeypatch.setattr(sys, "argv", [str(WORKER), str(tmp_path / "single"), "4"])
    runpy.run_path(str(WORKER), run_name="__main__")

    chief, other = load_weights(tmp_path / "weights-0.npz"), load_weights(tmp_path / "weights-1.npz")
    for a, b in zip(chief, other):
        np.testing.assert_array_equal(a, b)  # the workers stay in lockstep
    reference = load_weights(tmp_path / "single" / "weights-single.npz")
    for a, b in zip(chief, reference):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
    assert not np.allclose(reference[0], 0)
    single_info = json.loads((tmp_path / "single" / "epochs-single.json").read_text())
    # The compiled metric, counted over both workers' halves, as one process counts it (early stopping watches it).
    for figure in ("loss", "accuracy", "val_loss", "val_accuracy"):
        assert [h[figure] for h in infos[0]["history"]][-2:] == pytest.approx(
            [h[figure] for h in single_info["history"]][-2:], rel=1e-4), figure
    # Distribution, not two copies of one run: each worker is one of 2 replicas and trained on its
    # own half of every global batch of 64; the single process saw whole batches.
    for info in infos:
        assert (info["strategy"], info["replicas"]) == ("CollectiveAllReduceStrategy", 2)  # MultiWorkerMirrored
    assert single_info["replicas"] == 1 and all(len(rows) == 64 for rows in single_info["seen_rows"])
    resumed_batches = single_info["seen_rows"][-2 * 4:]  # the last two epochs' 4 batches
    assert len(single_info["seen_rows"]) == 4 * 4 and len(infos[0]["seen_rows"]) == len(resumed_batches)
    for chief_rows, other_rows, batch in zip(infos[0]["seen_rows"], infos[1]["seen_rows"], resumed_batches):
        assert len(chief_rows) == len(other_rows) == 32 and not set(chief_rows) & set(other_rows)
        assert sorted(chief_rows + other_rows) == sorted(batch)


def test_a_worker_whose_cluster_never_completes_gives_up_after_the_timeout(tmp_path):
    port, missing = free_ports(2)
    env = tf_config_env([f"127.0.0.1:{port}", f"127.0.0.1:{missing}"], 0)
    started = time.monotonic()
    run = subprocess.run([sys.executable, "-m", "kpipe", "run", "sentiment-bilstm", "--strategy", "multi_worker",
                          "--set", "training.worker_timeout_s=5"], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == -9  # killed by the watchdog: TF's wait cannot be interrupted from inside
    assert "waited 5 s for the cluster" in run.stderr and f"127.0.0.1:{missing}" in run.stderr
    assert time.monotonic() - started < 60


BAD_TF_CONFIGS = [
    (None, "needs TF_CONFIG"),
    ("{not json", "not a valid cluster description"),
    ('{"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 3}}', "index 3 is out of range"),
]


@pytest.mark.parametrize("tf_config, message", BAD_TF_CONFIGS)
def test_bad_tf_config_is_one_line_exit_2_before_tensorflow_loads(tmp_path, tf_config, message, monkeypatch,
                                                                  capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TF_CONFIG", raising=False)
    if tf_config is not None:
        monkeypatch.setenv("TF_CONFIG", tf_config)
    assert main(["run", "sentiment-bilstm", "--strategy", "multi_worker"]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1 and not (tmp_path / "saved_models").exists()


def test_bad_tf_config_in_a_fresh_process_never_loads_tensorflow(tmp_path):
    env = {**{k: v for k, v in os.environ.items() if k != "TF_CONFIG"}, "TF_CONFIG": BAD_TF_CONFIGS[1][0]}
    run = kpipe_reporting_tensorflow("run", "sentiment-bilstm", "--strategy", "multi_worker", cwd=tmp_path, env=env)
    assert run.returncode == 2 and BAD_TF_CONFIGS[1][1] in run.stderr and "Traceback" not in run.stderr
    assert run.stdout.strip() == "False"


def test_multi_worker_after_tensorflow_has_run_is_a_clear_error(tmp_path):
    port, other = free_ports(2)
    script = ("import tensorflow as tf\ntf.constant(1.0) + 1\nfrom kpipe.errors import ConfigError\n"
              "from kpipe.training.loop import make_strategy\n"
              "try:\n    make_strategy('multi_worker')\nexcept ConfigError as error:\n    print(error)\n")
    run = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                         env=tf_config_env([f"127.0.0.1:{port}", f"127.0.0.1:{other}"], 0))
    assert run.returncode == 0, run.stderr[-2000:]
    assert "must be created before TensorFlow runs anything" in run.stdout
