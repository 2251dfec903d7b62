"""Named pipelines under two real workers (TF_CONFIG on 127.0.0.1): exports, no validation set, a dying worker.

Apart from test_multi_worker.py so the two pytest workers share the slow cluster tests.
"""

import sys
import time

import pytest

from tests.clusters import finish, free_ports, start_workers, tf_config_env
from tests.helpers import kpipe_reporting_tensorflow

pytestmark = pytest.mark.slow  # real worker processes: tens of seconds each


def test_a_worker_that_dies_makes_the_other_fail_within_a_bounded_time(tmp_path):
    command = [sys.executable, "-m", "kpipe", "run", "sentiment-bilstm", "--strategy", "multi_worker",
               "--set", "data.limit=300", "--set", "training.epochs=1000", "--set", "model.units=[4]",
               "--set", "training.early_stopping_patience=0"]
    chief, other = start_workers(command, tmp_path)
    deadline = time.monotonic() + 240
    seen = ""
    while "Epoch 2/" not in seen and time.monotonic() < deadline:  # training has started on both
        seen += chief.stderr.readline()
        assert chief.poll() is None, seen[-2000:]
    other.kill()
    killed = time.monotonic()
    _, err = chief.communicate(timeout=180)
    waited = time.monotonic() - killed
    assert chief.returncode == 2, (seen + err)[-3000:]
    assert "another worker died or stopped answering" in err
    assert "Traceback" not in err
    assert waited < 120  # TF's coordination heartbeats; measured about 11 s here
    assert not (tmp_path / "saved_models" / "sentiment-bilstm" / "1").exists()


@pytest.mark.parametrize("pipeline, overrides", [
    # No validation set; the dense Keras path (the sparse SGD trainer runs on one device and says so).
    ("word2vec-bible", ["data.limit=300", "preprocessing.min_count=2", "model.embedding_dim=8",
                        "model.sparse_updates=false", "training.optimizer=adam", "training.learning_rate=0.004"]),
    ("g2p-attention", ["data.limit=300", "model.encoder_units=8", "model.decoder_units=8",
                       "model.attention_units=8", "model.embedding_dim=8"]),
])
def test_pipelines_train_under_two_workers_and_only_the_chief_exports(tmp_path, pipeline, overrides):
    command = [sys.executable, "-m", "kpipe", "run", pipeline, "--strategy", "multi_worker", "--set",
               "training.epochs=1"] + [arg for o in overrides for arg in ("--set", o)]
    (rc0, out0, err0), (rc1, out1, err1) = finish(start_workers(command, tmp_path))
    assert rc0 == 0 and rc1 == 0, err0[-2000:] + err1[-2000:]
    assert "MultiWorkerMirroredStrategy, 2 replica(s), global batch " in err0
    assert "Not the chief" in err1 and "Not the chief" not in err0
    root = tmp_path / "saved_models" / pipeline
    assert sorted(p.name for p in root.iterdir() if not p.name.startswith(".")) == ["1"]
    assert (root / "1" / "saved_model.pb").is_file() and (root / "1" / "kpipe.json").is_file()


def test_sparse_word2vec_in_a_cluster_is_one_line_exit_2_before_tensorflow_loads(tmp_path):
    """The replicas come from TF_CONFIG, so the mistake is reported before TensorFlow loads and the cluster
    forms; without that check this worker would wait for the other until its timeout kills it."""
    addresses = [f"127.0.0.1:{port}" for port in free_ports(2)]
    run = kpipe_reporting_tensorflow("run", "word2vec-bible", "--strategy", "multi_worker", "--set",
                                     "training.worker_timeout_s=20", cwd=tmp_path, env=tf_config_env(addresses, 0))
    assert run.returncode == 2, run.stderr[-2000:]
    assert run.stderr.strip() == ("kpipe: error: model.sparse_updates trains on one device, not 2 replicas; "
                                  "use --strategy default, or model.sparse_updates=false")
    assert run.stdout.strip() == "False"
    assert not (tmp_path / "saved_models").exists()
