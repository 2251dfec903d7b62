"""The run logs an export copies: history.csv always, tensorboard/ when the run wrote it, and a worker
that is not the chief survives the chief deleting the shared work folder under it."""

import csv
import shutil

import pytest

from kpipe.exports import run_files

HISTORY = [{"loss": 0.9, "val_loss": 1.0}, {"loss": 0.5, "val_loss": 0.7}]


def logs(work_dir):
    (work_dir / "tensorboard" / "train").mkdir(parents=True)
    (work_dir / "tensorboard" / "train" / "events.out.tfevents.1").write_bytes(b"event")


def test_the_history_and_the_tensorboard_logs_are_copied(tmp_path):
    work, export = tmp_path / "work", tmp_path / "export"
    logs(work)
    export.mkdir()
    run_files.copy_run_logs(work, export, HISTORY)
    assert (export / "tensorboard" / "train" / "events.out.tfevents.1").read_bytes() == b"event"
    rows = list(csv.DictReader((export / "history.csv").open(encoding="utf-8")))
    assert [(r["epoch"], float(r["loss"])) for r in rows] == [("0", 0.9), ("1", 0.5)]


def test_logs_deleted_while_they_are_copied_leave_the_history(tmp_path, monkeypatch):
    work, export = tmp_path / "work", tmp_path / "export"
    logs(work)
    export.mkdir()

    def chief_deletes_the_work_folder_midway(source, target):
        shutil.rmtree(work)  # what the chief's finish_run does once it has published
        raise shutil.Error([(str(source), str(target), "[Errno 2] No such file or directory")])

    monkeypatch.setattr(run_files.shutil, "copytree", chief_deletes_the_work_folder_midway)
    run_files.copy_run_logs(work, export, HISTORY)
    assert (export / "history.csv").is_file() and not (export / "tensorboard").exists()


def test_a_run_without_logs_copies_the_history_alone(tmp_path):
    (tmp_path / "export").mkdir()
    run_files.copy_run_logs(tmp_path / "work", tmp_path / "export", HISTORY)
    assert sorted(p.name for p in (tmp_path / "export").iterdir()) == ["history.csv"]


def test_a_copy_that_fails_while_the_logs_are_there_is_reported(tmp_path, monkeypatch):
    work, export = tmp_path / "work", tmp_path / "export"
    logs(work)
    export.mkdir()

    def disk_full(source, target):
        raise shutil.Error([(str(source), str(target), "[Errno 28] No space left on device")])

    monkeypatch.setattr(run_files.shutil, "copytree", disk_full)
    with pytest.raises(shutil.Error, match="No space left"):
        run_files.copy_run_logs(work, export, HISTORY)
