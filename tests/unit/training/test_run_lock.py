"""The run lock without TensorFlow: a live holder is named, a free or absent lock passes and nothing is made."""

import json

import filelock
import pytest

from kpipe.training.run_lock import RunInProgressError, RunLock


def test_a_held_lock_is_named_and_a_released_one_passes(tmp_path):
    holder = RunLock(tmp_path / "imdb-bilstm", "abc123")
    holder.acquire()
    owner = json.loads(holder.owner_path.read_text())
    with pytest.raises(RunInProgressError, match=f"in progress \\(process {owner['pid']} on .*work folder "
                                                 f".*imdb-bilstm/.work/abc123\\)"):
        RunLock(tmp_path / "imdb-bilstm", "abc123").check_free()
    with pytest.raises(RunInProgressError):
        RunLock(tmp_path / "imdb-bilstm", "abc123").acquire()
    RunLock(tmp_path / "imdb-bilstm", "other").check_free()  # another config's lock is its own
    holder.release()
    RunLock(tmp_path / "imdb-bilstm", "abc123").check_free()
    assert not holder.owner_path.exists() and holder.path.exists()
    assert not filelock.FileLock(str(holder.path)).is_locked  # the look did not keep it


def test_looking_at_a_config_never_run_creates_nothing(tmp_path):
    RunLock(tmp_path / "sentiment-bilstm", "abc123").check_free()
    assert list(tmp_path.iterdir()) == []


def test_a_failed_run_that_wrote_nothing_leaves_no_trace(tmp_path):
    lock = RunLock(tmp_path / "exports" / "sentiment-bilstm", "abc123")
    lock.acquire()
    lock.release(remove=True)
    assert list(tmp_path.iterdir()) == []


def test_the_owner_note_never_holds_a_database_password(tmp_path, monkeypatch):
    monkeypatch.setattr("sys.argv", ["kpipe", "tune", "x", "--storage", "postgresql://bob:hunter2@db/kpipe"])
    lock = RunLock(tmp_path / "x", "abc123")
    lock.acquire()
    try:
        note = json.loads(lock.owner_path.read_text())
    finally:
        lock.release()
    assert note["command"] == "kpipe tune x --storage postgresql://bob:***@db/kpipe"
