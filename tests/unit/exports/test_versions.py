import pytest

from kpipe.errors import ModelNotFoundError
from kpipe.exports.versions import resolve_model_dir, versions, write_version


def test_each_write_gets_the_next_version_and_never_overwrites(tmp_path):
    root = tmp_path / "pipe"
    first = write_version(root, lambda d: (d / "saved_model.pb").write_text("one"))
    second = write_version(root, lambda d: (d / "saved_model.pb").write_text("two"))
    assert (first.name, second.name) == ("1", "2")
    assert (first / "saved_model.pb").read_text() == "one"
    assert versions(root) == [1, 2]


def test_failed_write_leaves_nothing_behind(tmp_path):
    root = tmp_path / "pipe"

    def explode(d):
        (d / "half.txt").write_text("half")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        write_version(root, explode)
    assert list(root.iterdir()) == []


def test_resolve_model_dir_accepts_version_folder_root_or_pipeline_name(tmp_path):
    root = tmp_path / "saved_models" / "pipe"
    for _ in range(2):
        write_version(root, lambda d: (d / "saved_model.pb").write_text("x"))
    assert resolve_model_dir(root / "1") == root / "1"
    assert resolve_model_dir(root) == root / "2"
    assert resolve_model_dir("pipe", tmp_path / "saved_models") == root / "2"
    with pytest.raises(ModelNotFoundError, match="no exported model at 'nope'.*kpipe run"):
        resolve_model_dir("nope", tmp_path / "saved_models")
