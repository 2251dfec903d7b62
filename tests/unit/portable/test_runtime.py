"""The portable runtime's one-line answers to folders it cannot use (before any network loads)."""

import json

from kpipe.cli.commands import main


def portable_folder(path, **manifest):
    path.mkdir()
    (path / "kpipe.json").write_text(json.dumps({"format": "onnx", "task": "classify",
                                                 "portable_kpipe_version": "0.0.9", **manifest}))
    return path


def test_a_folder_written_by_another_kpipe_is_one_line(tmp_path, capsys):
    folder = portable_folder(tmp_path / "1-onnx")
    (folder / "preprocessing.json").write_text(json.dumps({"kind": "word_ids"}))  # an older layout
    assert main(["predict", str(folder), "some text"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"kpipe: error: {folder} was written by kpipe 0.0.9") and err.count("\n") == 1
    assert "run `kpipe export` again" in err


def test_a_portable_export_of_another_task_is_one_line(tmp_path, capsys):
    folder = portable_folder(tmp_path / "1-onnx", task="forecast")
    assert main(["predict", str(folder), "some text"]) == 2
    err = capsys.readouterr().err
    assert "is a portable forecast export, not a classify one; kpipe predict answers with classify exports" in err
