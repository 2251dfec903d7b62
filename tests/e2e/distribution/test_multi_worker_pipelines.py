"""Named pipelines under two real workers (TF_CONFIG on 127.0.0.1): exports, no validation set, a dying worker.

Apart from test_multi_worker.py so the two pytest workers share the slow cluster tests.
"""

import sys
import time

import pytest

from tests.helpers import finish, start_workers


def test_pipeline_under_two_workers_only_the_chief_exports(tmp_path):
    command = [sys.executable, "-m", "kpipe", "run", "sentiment-bilstm", "--strategy", "multi_worker",
               "--set", "data.limit=400", "--set", "training.epochs=1", "--set", "model.units=[8]"]
    (rc0, out0, err0), (rc1, out1, err1) = finish(start_workers(command, tmp_path))
    assert rc0 == 0 and rc1 == 0, err0[-2000:] + err1[-2000:]
    assert "MultiWorkerMirroredStrategy, 2 replica(s), global batch 128" in err0
    assert "Not the chief" in err1
    root = tmp_path / "saved_models" / "sentiment-bilstm"
    assert sorted(p.name for p in root.iterdir() if not p.name.startswith(".")) == ["1"]
    assert (root / "1" / "saved_model.pb").is_file() and (root / "1" / "history.csv").is_file()


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
def test_word2vec_and_translate_train_under_two_workers(tmp_path, pipeline, overrides):
    command = [sys.executable, "-m", "kpipe", "run", pipeline, "--strategy", "multi_worker", "--set",
               "training.epochs=1"] + [arg for o in overrides for arg in ("--set", o)]
    (rc0, out0, err0), (rc1, out1, err1) = finish(start_workers(command, tmp_path))
    assert rc0 == 0 and rc1 == 0, err0[-2000:] + err1[-2000:]
    assert "MultiWorkerMirroredStrategy, 2 replica(s)" in err0
    root = tmp_path / "saved_models" / pipeline
    assert sorted(p.name for p in root.iterdir() if not p.name.startswith(".")) == ["1"]



def test_sparse_word2vec_under_two_workers_is_one_line_exit_2(tmp_path):
    command = [sys.executable, "-m", "kpipe", "run", "word2vec-bible", "--strategy", "multi_worker",
               "--set", "data.limit=300", "--set", "preprocessing.min_count=2"]
    for rc, out, err in finish(start_workers(command, tmp_path)):
        errors = [line for line in err.splitlines() if line.startswith("kpipe: error")]
        assert rc == 2, err[-2000:]
        assert errors == [err.strip().splitlines()[-1]] and "Traceback" not in err, err[-2000:]
        assert "model.sparse_updates trains on one device, not 2 replicas" in errors[0]
    assert not (tmp_path / "saved_models" / "word2vec-bible" / "1").exists()
