"""Real SIGKILLs at the moments that used to leave a run unrecoverable or published twice: during the export,
and during the cleanup after publishing; and a data file edited between a kill and the rerun."""

import signal
import subprocess
import sys

import pytest

from kpipe.cli.commands import main
from tests.made_up_data import synthetic_reviews

pytestmark = pytest.mark.slow
RUN = ["run", "imdb-bigrams", "--data", "reviews.csv", "--set", "training.epochs=2", "--set",
       "evaluation.baseline=false", "--set", "model.max_features=300"]


def killed_at(where: str, cwd) -> None:
    """`kpipe RUN` in a fresh process that SIGKILLs itself at `where`: inside the export once its SavedModel is
    written ("export"), or in the cleanup after publishing, half-way through deleting the resume state
    ("cleanup")."""
    script = f"""
import os, shutil, signal, sys
from kpipe.exports import run_files, saved_model
die = lambda: os.kill(os.getpid(), signal.SIGKILL)
if {where!r} == "export":
    write = saved_model.write_saved_model
    saved_model.write_saved_model = lambda path, **kw: (write(path, **kw), die())
else:
    rmtree = shutil.rmtree
    def half_then_die(path, **kw):  # state.json gone, arrays.npz not yet
        for state in sorted(__import__("pathlib").Path(path).rglob("state.json")):
            state.unlink()
        die()
    run_files.shutil = __import__("types").SimpleNamespace(rmtree=half_then_die, copytree=shutil.copytree,
                                                          Error=shutil.Error)  # run_files' deletions only
from kpipe.cli.commands import main
sys.exit(main(sys.argv[1:]))
"""
    done = subprocess.run([sys.executable, "-c", script, *RUN], cwd=cwd, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == -signal.SIGKILL, done.stderr[-3000:]


@pytest.fixture
def folder(tmp_path, monkeypatch):
    synthetic_reviews(400, seed=1).to_csv(tmp_path / "reviews.csv", index=False)
    monkeypatch.chdir(tmp_path)  # the reruns in-process: the killed runs were the real command
    return tmp_path


def entries(root):
    return sorted(p.name for p in root.iterdir() if p.name not in (".locks", ".work"))


def test_killed_during_the_export_the_rerun_publishes_one_version_and_leaves_nothing(folder, caplog):
    killed_at("export", folder)
    root = folder / "saved_models" / "imdb-bigrams"
    assert [p for p in root.iterdir() if p.name.startswith(".tmp-")]  # what the kill left
    with caplog.at_level("INFO"):
        assert main(RUN) == 0
    assert "Resuming after epoch 2" in caplog.text  # the finished training, not trained again
    assert entries(root) == ["1"]  # the killed export's temporary folder removed, one version


def test_killed_during_the_cleanup_the_rerun_neither_fails_nor_publishes_twice(folder, capsys):
    killed_at("cleanup", folder)
    root = folder / "saved_models" / "imdb-bigrams"
    assert entries(root) == ["1"]
    assert main(RUN) == 0  # used to resume from a state.json-less checkpoint, or publish version 2
    assert "had already been exported to saved_models/imdb-bigrams/1" in capsys.readouterr().out
    assert entries(root) == ["1"] and not list((root / ".work").iterdir())
    assert main(RUN) == 0 and entries(root) == ["1", "2"]  # a new run of the config is a new version, as ever


def test_a_data_file_changed_between_a_kill_and_the_rerun_is_refused_in_one_line(folder, monkeypatch, capsys):
    from kpipe.exports import versions

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt  # as Ctrl+C just before the export: the training's state stays
    with monkeypatch.context() as patch:
        patch.setattr(versions, "write_version", interrupted)
        assert main(RUN) == 130
    synthetic_reviews(400, seed=2).to_csv(folder / "reviews.csv", index=False)  # other reviews, same file
    capsys.readouterr()
    assert main(RUN) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "the data (" in err[0] and "reviews.csv) changed since the interrupted run" in err[0]
    assert "delete " in err[0] and not (folder / "saved_models" / "imdb-bigrams" / "1").exists()
    synthetic_reviews(400, seed=1).to_csv(folder / "reviews.csv", index=False)  # restored: the rerun resumes
    assert main(RUN) == 0 and (folder / "saved_models" / "imdb-bigrams" / "1" / "saved_model.pb").is_file()
