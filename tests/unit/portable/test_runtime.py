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


def test_an_export_whose_json_names_a_file_outside_its_folder_is_refused(tmp_path):
    """Reliability review round 5, finding 15: names from an export's JSON were joined to its folder unchecked, so
    a crafted export could read any file (a word list served back as a membership oracle)."""
    import pytest

    from kpipe.errors import KpipeError
    from kpipe.portable.runtime import inside, member

    folder = tmp_path / "1-onnx"
    folder.mkdir()
    (tmp_path / "secret.txt").write_text("password\n")
    (folder / "vocab.txt").write_text("a\nb\n")
    assert inside(folder, "vocab.txt") == (folder / "vocab.txt").resolve()
    for name in ("../secret.txt", str(tmp_path / "secret.txt"), "sub/../../secret.txt"):
        with pytest.raises(KpipeError, match="outside its folder"):
            inside(folder, name)
        with pytest.raises(KpipeError, match="outside its folder"):
            member(folder, {"kind": "word_ids", "vocabulary": name, "network": "model.onnx"}, "onnx")
