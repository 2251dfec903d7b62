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
