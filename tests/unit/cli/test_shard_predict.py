"""Batch prediction over shards (reliability review round 5, finding 8), with a stand-in model: every shard checked
for the column before any work, a Parquet column null in its first batch, Windows line ends, a rerun with another
model, and the partial files of killed runs."""

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from kpipe.cli import shard_predict
from kpipe.errors import KpipeError


def predict(texts):
    return pd.DataFrame({"label": ["long" if len(t) > 5 else "short" for t in texts]})


def test_a_later_shard_without_the_column_is_one_line_before_any_work(tmp_path):
    pd.DataFrame({"text": ["a", "b"]}).to_parquet(tmp_path / "a.parquet")
    pd.DataFrame({"body": ["c"]}).to_parquet(tmp_path / "b.parquet")
    with pytest.raises(KpipeError, match=r"b.parquet has no column 'text' \(its columns: body\)"):
        shard_predict.check_shard_job(str(tmp_path / "*.parquet"), "text", str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()


def test_a_parquet_column_null_in_its_first_batch_keeps_the_inputs_type(tmp_path):
    notes = [None] * 5 + ["a note", None, "another"]
    counts = [1, 2, None, 4, 5, 6, 7, 8]
    pd.DataFrame({"text": [f"text number {i}" for i in range(8)], "notes": notes,
                  "count": pd.array(counts, dtype="Int64")}).to_parquet(tmp_path / "in.parquet")
    paths, folder = shard_predict.check_shard_job(str(tmp_path / "in.parquet"), "text", str(tmp_path / "out"))
    # batches of 4 rows: the first holds no note at all
    assert shard_predict.predict_shards(paths, folder, "text", predict, batch_rows=4) == (1, 0, 8)
    out = pd.read_parquet(folder / "in.parquet")
    assert out["notes"].tolist() == notes and out["count"].tolist()[3:] == counts[3:]
    assert out["label"].tolist() == ["long"] * 8


def test_windows_line_ends_leave_no_carriage_return_in_names_or_values(tmp_path):
    (tmp_path / "in.csv").write_bytes(b"id,text\r\n1,short\r\n2,a longer one\r\n")
    paths, folder = shard_predict.check_shard_job(str(tmp_path / "in.csv"), "text", str(tmp_path / "out"))
    shard_predict.predict_shards(paths, folder, "text", predict)
    out = pd.read_csv(folder / "in.csv", dtype=str)
    assert list(out.columns) == ["id", "text", "label"] and out["text"].tolist() == ["short", "a longer one"]


def test_a_rerun_with_another_model_is_refused_or_answers_every_shard_again(tmp_path):
    for name in ("a", "b"):
        pd.DataFrame({"text": ["x", "a long text"]}).to_parquet(tmp_path / f"{name}.parquet")
    paths, folder = shard_predict.check_shard_job(str(tmp_path / "*.parquet"), "text", str(tmp_path / "out"))
    shard_predict.check_same_model(folder, "model one", overwrite=False)
    shard_predict.predict_shards(paths, folder, "text", predict)
    shard_predict.check_same_model(folder, "model one", overwrite=False)  # the same model: resumes
    assert shard_predict.predict_shards(paths, folder, "text", predict) == (0, 2, 0)
    with pytest.raises(KpipeError, match="holds answers of model one, not model two.*--overwrite"):
        shard_predict.check_same_model(folder, "model two", overwrite=False)
    shard_predict.check_same_model(folder, "model two", overwrite=True)
    assert shard_predict.predict_shards(paths, folder, "text", predict) == (2, 0, 4)


def test_a_killed_runs_partial_shard_is_removed_by_the_next_run(tmp_path):
    pd.DataFrame({"text": ["x"]}).to_parquet(tmp_path / "a.parquet")
    folder = tmp_path / "out"
    folder.mkdir()
    dead = int(subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                              text=True).stdout)
    killed = folder / f".a.parquet.{dead}.partial"
    killed.write_bytes(np.zeros(1000, np.uint8).tobytes())
    live = folder / f".b.parquet.{__import__('os').getpid()}.partial"  # a run still at work
    live.write_bytes(b"")
    shard_predict.predict_shards([tmp_path / "a.parquet"], folder, "text", predict)
    assert not killed.exists() and live.exists()


def test_each_output_shard_is_flushed_before_it_takes_its_name(tmp_path, monkeypatch):
    """A rerun skips the shards whose output exists (reliability finding 19): the output's bytes reach the disk
    before the rename that makes it exist, and the rename before the next shard starts."""
    import os
    from pathlib import Path

    for name in ("a", "b"):
        pd.DataFrame({"text": ["x", "a long text"]}).to_parquet(tmp_path / f"{name}.parquet")
    paths, folder = shard_predict.check_shard_job(str(tmp_path / "*.parquet"), "text", str(tmp_path / "out"))
    events, rename = [], os.replace
    monkeypatch.setattr(shard_predict, "fsync_file", lambda path: events.append(("flush", Path(path).name)))
    monkeypatch.setattr(shard_predict, "fsync_folder", lambda path: events.append(("flush folder", Path(path).name)))
    monkeypatch.setattr(shard_predict.os, "replace", lambda a, b: (events.append(("rename", Path(a).name)),
                                                                   rename(a, b))[1])
    shard_predict.predict_shards(paths, folder, "text", predict)
    renamed = [name for kind, name in events if kind == "rename"]
    assert len(renamed) == 2
    for name in renamed:
        at = events.index(("rename", name))
        assert events[at - 1] == ("flush", name) and events[at + 1] == ("flush folder", "out"), events
