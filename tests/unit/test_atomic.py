"""Whole files or none: a write that fails midway leaves the previous file and no partial beside it."""

import pytest

from kpipe.atomic import write_atomically, write_text_atomically


def test_a_failed_write_keeps_the_previous_file_and_leaves_no_partial(tmp_path):
    target = tmp_path / "trials.csv"
    write_text_atomically(target, "a,b\n1,2\n")

    def half_then_fail(partial):
        partial.write_text("a,b\n9")
        raise OSError("No space left on device")

    with pytest.raises(OSError):
        write_atomically(target, half_then_fail)
    assert target.read_text() == "a,b\n1,2\n" and sorted(p.name for p in tmp_path.iterdir()) == ["trials.csv"]
    write_text_atomically(target, "new\n")
    assert target.read_text() == "new\n" and len(list(tmp_path.iterdir())) == 1


def test_a_folder_published_meanwhile_by_another_writer_is_one_line_and_is_not_replaced(tmp_path):
    from kpipe.atomic import publish_folder
    from kpipe.errors import KpipeError

    first, second, target = tmp_path / ".tmp-a", tmp_path / ".tmp-b", tmp_path / "1-onnx"
    for folder, text in ((first, "first"), (second, "second")):
        folder.mkdir()
        (folder / "model.onnx").write_text(text)
    assert publish_folder(first, target) == target
    with pytest.raises(KpipeError, match="1-onnx was written meanwhile by another process; nothing was replaced"):
        publish_folder(second, target)
    assert (target / "model.onnx").read_text() == "first" and (second / "model.onnx").exists()
