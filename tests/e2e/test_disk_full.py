"""A full disk while checkpointing or exporting: one line, exit 2, earlier versions and the last good
checkpoint intact, and the rerun resumes."""

import errno

import numpy as np
import pytest

from kpipe.cli.commands import main

pytestmark = pytest.mark.slow
RUN = ["run", "sentiment-bigrams", "--set", "data.limit=300", "--set", "training.epochs=2", "--set",
       "training.early_stopping_patience=0", "--set", "evaluation.baseline=false", "--set", "model.max_features=500"]


def full_disk(filename):
    return OSError(errno.ENOSPC, "No space left on device", filename)


def test_a_full_disk_is_one_line_and_the_rerun_resumes(tmp_path, monkeypatch, capsys, caplog):
    monkeypatch.chdir(tmp_path)
    root = tmp_path / "saved_models" / "sentiment-bigrams"
    assert main(RUN) == 0  # version 1, the one that must stay intact
    version_1 = sorted(p.relative_to(root / "1") for p in (root / "1").rglob("*"))
    capsys.readouterr()

    # The checkpoint of epoch 2 cannot be written.
    import kpipe.training.resume as resume

    savez, calls = np.savez, []

    def savez_until_full(path, **arrays):
        calls.append(path)
        if len(calls) == 2:
            raise full_disk(str(path))
        return savez(path, **arrays)

    monkeypatch.setattr(resume.np, "savez", savez_until_full)
    rerun = RUN + ["--set", "training.seed=2"]
    assert main(rerun) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("kpipe: error: no space left on device writing ") and \
        "rerun the same command" in err[0]
    work = next((root / ".work").iterdir())
    assert [p.name for p in (work / "checkpoints").iterdir()] == ["epoch-0001"]  # no partial one left behind
    assert sorted(p.relative_to(root / "1") for p in (root / "1").rglob("*")) == version_1
    assert sorted(p.name for p in root.iterdir() if p.name.isdigit()) == ["1"]

    # The export cannot be written: nothing published, the finished training kept.
    monkeypatch.setattr(resume.np, "savez", savez)
    import keras

    def save_to_full_disk(self, filepath, *args, **kwargs):
        raise full_disk(None)  # as zipfile raises it while Keras writes model.keras

    with monkeypatch.context() as patch:
        patch.setattr(keras.Model, "save", save_to_full_disk)
        assert main(rerun) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("kpipe: error: no space left on device; free some space")
    assert sorted(p.name for p in root.iterdir() if p.name.isdigit()) == ["1"]
    assert not [p for p in root.iterdir() if p.name.startswith(".tmp-")]

    # Space freed: the rerun resumes after epoch 2 (trained before the export failed) and publishes version 2.
    caplog.clear()
    with caplog.at_level("INFO"):
        assert main(rerun) == 0
    assert any("Resuming after epoch 2" in r.getMessage() for r in caplog.records)
    assert (root / "2" / "saved_model.pb").is_file()


@pytest.fixture
def small_disk(tmp_path):
    """A real 64 MiB tmpfs (as root); skipped where mounting is not allowed."""
    import shutil
    import subprocess

    mount = tmp_path / "disk"
    mount.mkdir()
    if shutil.which("mount") is None:
        pytest.skip("no mount command here")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(mount)], capture_output=True,
                          text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip() or done.returncode}): needs root")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def fill(disk):
    """Write zeros into `disk` until the device is really full."""
    block = bytes(1 << 16)
    with open(disk / "filler", "wb") as f:
        try:
            while True:
                f.write(block)
                f.flush()
        except OSError as error:
            assert error.errno == errno.ENOSPC


def test_tensorflows_own_writer_on_a_really_full_disk_is_one_line_and_the_rerun_resumes(small_disk, monkeypatch,
                                                                                        capsys, caplog):
    """TensorFlow reports a full disk as ResourceExhaustedError, not OSError, from the SavedModel writer, which
    runs first in an export: the disk is filled for real just before it writes."""
    monkeypatch.chdir(small_disk)
    root = small_disk / "saved_models" / "sentiment-bigrams"
    from kpipe.exports import saved_model

    write_saved_model = saved_model.write_saved_model

    def fill_then_write(path, **kwargs):
        fill(small_disk)
        return write_saved_model(path, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(saved_model, "write_saved_model", fill_then_write)
        assert main(RUN) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("kpipe: error: no space left on device writing "), err
    assert "Traceback" not in "\n".join(err) and "rerun the same command" in err[0]
    assert not [p for p in root.iterdir() if p.name.isdigit() or p.name.startswith(".tmp-")]  # nothing half-written

    (small_disk / "filler").unlink()  # space freed: the finished training is resumed, not redone
    caplog.clear()
    with caplog.at_level("INFO"):
        assert main(RUN) == 0
    assert any("Resuming after epoch 2 " in r.getMessage() for r in caplog.records)
    assert (root / "1" / "saved_model.pb").is_file()
    assert not (root / ".work").exists() or not list((root / ".work").iterdir())  # the resume state cleaned up
