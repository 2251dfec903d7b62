"""`kpipe tune` through the real command on tiny data: the study's report, the best config reproducing its
validation figure, two processes on one SQLite study, a kill -9 and rerun, pruning, and every mistake."""

import json
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from kpipe.cli.commands import main
from tests.helpers import wait_for

TINY = ["--set", "data.limit=300", "--set", "training.epochs=2", "--set", "model.max_features=500",
        "--set", "evaluation.baseline=false"]
SPACE = '"training.learning_rate" = {low = 0.003, high = 0.1, log = true}\n"model.ngrams" = [1, 2]\n'


def states(folder):
    with sqlite3.connect(folder / "saved_models" / "sentiment-bigrams" / "tune" / "study.db") as db:
        return [row[0] for row in db.execute("SELECT state FROM trials ORDER BY number")]


def beating(folder):
    """Whether a running trial has recorded a heartbeat. Optuna fails a killed trial by its heartbeat's age, so a
    tuner killed between creating a trial and its first heartbeat (milliseconds) leaves that trial "running"
    for good; this test kills it mid-trial, after the first heartbeat."""
    with sqlite3.connect(folder / "saved_models" / "sentiment-bigrams" / "tune" / "study.db") as db:
        return db.execute("SELECT COUNT(*) FROM trials JOIN trial_heartbeats USING (trial_id) "
                          "WHERE state = 'RUNNING'").fetchone()[0] > 0


@pytest.fixture
def space(tmp_path):
    (tmp_path / "space.toml").write_text(SPACE)
    return tmp_path


@pytest.mark.slow  # trains
def test_a_study_writes_its_table_best_config_and_plots_and_the_best_config_reproduces(space, monkeypatch, capsys):
    monkeypatch.chdir(space)  # in-process: the tests below run the real command
    # --include-defaults: trial 0 runs the study's own config (the pipeline with these --set values)
    assert main(["tune", "sentiment-bigrams", "--space", "space.toml", *TINY, "--set", "training.learning_rate=0.02",
                 "--trials", "3", "--pruner", "none", "--include-defaults"]) == 0
    stdout = capsys.readouterr().out
    folder = space / "saved_models" / "sentiment-bigrams" / "tune"
    import pandas as pd

    table = pd.read_csv(folder / "trials.csv", keep_default_na=False)
    assert list(table["state"]) == ["complete"] * 3 and set(table.columns) >= {
        "trial", "value", "epochs", "seconds", "other_seconds", "training.learning_rate", "model.ngrams"}
    assert list(table["defaults"]) == ["yes", "", ""]
    assert table.loc[0, "training.learning_rate"] == 0.02 and table.loc[0, "model.ngrams"] == 2  # the defaults
    assert table.loc[1, "training.learning_rate"] != 0.02
    assert (table["seconds"] > 0).all() and (table["other_seconds"] > -0.5).all()  # the rest of each trial's time
    assert "Best: val_accuracy" in stdout
    for plot in ("optimization_history.png", "param_importances.png", "epoch_curves.png"):
        assert (folder / plot).read_bytes()[:4] == b"\x89PNG"
    assert "plots: optimization_history.png, param_importances.png, epoch_curves.png;" in stdout  # those written
    # `kpipe compare` over the study's folder: one row per trial, named by its number, with what the trials varied
    assert main(["compare", str(folder), "--out", "trials.png"]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert [row.split()[:2] for row in rows[1:4]] == [["trial", "0"], ["trial", "1"], ["trial", "2"]]
    assert "training.learning_rate" in rows[0] and "export.dir" not in rows[0]
    best = table.loc[table["value"].idxmax()]
    assert main(["run", str(folder / "best.toml"), "--set", f'export.dir="{space / "again"}"']) == 0
    history = json.loads((space / "again" / "sentiment-bigrams" / "1" / "metrics.json").read_text())["history"]
    assert pytest.approx(best["value"], abs=1e-6) in [h["val_accuracy"] for h in history]


@pytest.mark.slow  # trains
def test_two_processes_share_one_study_and_never_run_a_trial_twice(space):
    processes = [subprocess.Popen([sys.executable, "-m", "kpipe", "tune", "sentiment-bigrams", "--space",
                                   "space.toml", *TINY, "--trials", "3", "--pruner", "none"], cwd=space,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    for process in processes:
        _, err = process.communicate(timeout=600)
        assert process.returncode == 0, err[-3000:]
    finished = [s for s in states(space) if s == "COMPLETE"]
    assert 3 <= len(finished) <= 4  # the two may both start the last one
    trials = space / "saved_models" / "sentiment-bigrams" / "tune" / "trials"
    assert len({p.name for p in trials.iterdir()}) == len(states(space))  # one export folder per trial
    # Both processes have --seed 0; seeded alike, they used to draw the same values pairwise (trials 0 and 1, ...)
    rates = learning_rates(space)
    assert len(rates) == len(states(space)) and len(set(rates)) == len(rates), rates


def learning_rates(folder):
    with sqlite3.connect(folder / "saved_models" / "sentiment-bigrams" / "tune" / "study.db") as db:
        return [row[0] for row in db.execute("SELECT param_value FROM trial_params JOIN trials USING (trial_id) "
                                             "WHERE param_name = 'training.learning_rate' ORDER BY number")]


@pytest.mark.slow  # trains
def test_a_tuner_paused_past_the_grace_period_ends_cleanly_and_the_study_completes(space, monkeypatch):
    """SIGSTOP (a laptop lid, a VM pause) for longer than the grace period: the other process marks the paused
    one's trial failed; continued, the paused process used to die with Optuna's "Cannot tell a FAIL trial"."""
    command = ["tune", "sentiment-bigrams", "--space", "space.toml", *TINY, "--set", "training.epochs=8",
               "--set", "training.early_stopping_patience=0", "--trials", "1", "--pruner", "none",
               "--heartbeat-seconds", "1", "--grace-seconds", "2"]
    paused = subprocess.Popen([sys.executable, "-m", "kpipe", *command], cwd=space, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        assert wait_for(lambda: running_with_heartbeat(space), timeout=300, every=0.2), "no trial started"
        pause_outside_a_transaction(paused, space)
        time.sleep(3)  # past the 2 s grace period
        monkeypatch.chdir(space)  # the other process, in-process: it fails the silent trial and finishes the study
        assert main(command) == 0
    finally:
        paused.send_signal(signal.SIGCONT)
    _, err = paused.communicate(timeout=300)
    assert paused.returncode == 0 and "Traceback" not in err, err[-3000:]
    assert states(space)[0] == "FAIL" and states(space).count("COMPLETE") >= 1


def pause_outside_a_transaction(process, folder, tries=50):
    """SIGSTOP `process` at a moment it holds no lock on the SQLite study (stopped inside a write, it would block
    every other process until continued: a limit of SQLite, not of the tuner), checked with an exclusive lock."""
    for _ in range(tries):
        process.send_signal(signal.SIGSTOP)
        try:
            with sqlite3.connect(folder / "saved_models" / "sentiment-bigrams" / "tune" / "study.db", timeout=0.5,
                                 isolation_level=None) as db:
                db.execute("BEGIN EXCLUSIVE")
                db.execute("ROLLBACK")
            return
        except sqlite3.OperationalError:  # it was inside a transaction: let it finish, try again
            process.send_signal(signal.SIGCONT)
            time.sleep(0.2)
    raise AssertionError("the tuner never paused outside a database transaction")


def running_with_heartbeat(folder):
    try:
        return (folder / "saved_models/sentiment-bigrams/tune/study.db").exists() and beating(folder)
    except sqlite3.OperationalError:  # the database made, its tables not yet
        return False


@pytest.mark.slow  # trains
def test_a_tuner_killed_mid_trial_resumes_the_study_and_marks_that_trial_failed(space, monkeypatch):
    # heartbeats every second, a trial silent for 2 s failed (the defaults: 2 and 6 s)
    command = ["tune", "sentiment-bigrams", "--space", "space.toml", *TINY, "--set", "training.epochs=6", "--set",
               "training.early_stopping_patience=0", "--trials", "3", "--pruner", "none", "--heartbeat-seconds", "1",
               "--grace-seconds", "2"]
    process = subprocess.Popen([sys.executable, "-m", "kpipe", *command], cwd=space, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    deadline = time.time() + 300
    while time.time() < deadline:  # one trial finished and the next running, its heartbeat recorded
        try:
            found = states(space) if (space / "saved_models/sentiment-bigrams/tune/study.db").exists() else []
        except sqlite3.OperationalError:  # the database made, its tables not yet
            found = []
        if found.count("COMPLETE") == 1 and "RUNNING" in found and beating(space):
            break
        time.sleep(0.2)
    process.send_signal(signal.SIGKILL)
    process.wait()
    time.sleep(3)  # the killed trial's heartbeat is now older than the grace period
    monkeypatch.chdir(space)  # the rerun in-process: the killed tuner was the real command
    assert main(command) == 0
    assert states(space) == ["COMPLETE", "FAIL", "COMPLETE", "COMPLETE"]


@pytest.mark.slow  # trains
def test_a_trial_left_running_without_a_heartbeat_is_failed_when_the_study_resumes(space, monkeypatch):
    """A tuner killed between creating a trial and its first heartbeat leaves the trial running with none;
    Optuna's heartbeat rule never fails it; kpipe does once the resumed tuner has seen it without one for the grace
    period (timed on its own clock: tests/unit/tuning/test_orphans.py)."""
    import optuna

    monkeypatch.chdir(space)
    args = ["tune", "sentiment-bigrams", "--space", "space.toml", *TINY, "--set", "training.epochs=1",
            "--pruner", "none"]
    assert main([*args, "--trials", "1"]) == 0
    database = f"sqlite:///{space / 'saved_models' / 'sentiment-bigrams' / 'tune' / 'study.db'}"
    optuna.load_study(study_name=None, storage=database).ask()  # created, never run: no heartbeat
    assert main([*args, "--trials", "2", "--heartbeat-seconds", "1", "--grace-seconds", "1.2"]) == 0  # not 6 s
    assert states(space) == ["COMPLETE", "FAIL", "COMPLETE"]


@pytest.mark.parametrize("space_text, args, message", [
    ('"training.learnin_rate" = [0.1]\n', [], "refuses: unknown key 'training.learnin_rate' (did you mean "
                                              "'training.learning_rate'?)"),
    ('"training.learning_rate" = {low = 0.1, high = 0.01}\n', [], "is an empty range"),
    ('"model.ngrams" = []\n', [], "is an empty list of choices"),
    ('"model.ngrams" = [1, 9]\n', [], "offers model.ngrams=9, which the config refuses"),
    ('"training.learning_rate" = {low = 0.01, high = 0.1}\n', ["--sampler", "grid"], "--sampler grid needs choices"),
    ('"model.ngrams" = [1, 2]\n', ["--trials", "0"], "--trials must be at least 1"),
    ('"model.ngrams" = [1, 2]\n', ["--pruner", "medain"], "--pruner must be one of median, successive_halving, hyperband, none"),
    ('"model.ngrams" = [1, 2]\n', ["--prune-after", "0"], "--prune-after must be at least 1 epoch"),
    ('"model.ngrams" = [1, 2]\n', ["--grace-seconds", "1"], "--heartbeat-seconds must be at least 1 and "
                                                            "--grace-seconds above it. Received: 2 and 1"),
    ('"model.ngrams" = [1]\n', ["--include-defaults"],
     "--include-defaults: the pipeline's model.ngrams=2 is not among the search space's choices for model.ngrams"),
    ('"training.learning_rate" = {low = 0.01, high = 0.1}\n', ["--include-defaults"],
     "--include-defaults: the pipeline's training.learning_rate=0.001 is outside the search space's range [0.01, 0.1]"),
])
def test_mistakes_are_one_line_exit_2_and_nothing_written(space_text, args, message, tmp_path, monkeypatch, capsys):
    (tmp_path / "space.toml").write_text(space_text)
    monkeypatch.chdir(tmp_path)
    assert main(["tune", "sentiment-bigrams", "--space", "space.toml", *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("kpipe: error: ") and message in err[0], err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["space.toml"]


@pytest.mark.parametrize("pipeline, message", [
    ("minilm-embeddings", "embed pipelines train nothing"),  # was a KeyError traceback: the metric table lacked embed
    ("word2vec-bible", "word2vec pipelines have no validation split to score trials on"),
])
def test_a_pipeline_with_nothing_to_score_says_so_in_one_line(pipeline, message, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["tune", pipeline, "--trials", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err
    assert not list(tmp_path.iterdir())


def test_a_pipeline_without_a_space_says_how_to_give_one(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["tune", "electricity-mstl"]) == 2
    assert "has no [tune] table to search" in capsys.readouterr().err


@pytest.mark.slow  # trains
def test_the_storage_url_comes_from_the_environment_and_its_password_is_never_shown(tmp_path, monkeypatch, caplog):
    """KPIPE_TUNE_STORAGE keeps the URL off the command line; its password shows as *** in the log line that
    names the study's database (the lock note: tests/unit/training/test_run_lock.py)."""
    from kpipe.tuning import study as tuning

    url = "sqlite:///" + str(tmp_path / "study.db")
    seen = {}

    def opened(optuna, options, *args, **kwargs):
        seen["storage"] = options.storage
        return open_study(optuna, options.__class__(**{**options.__dict__, "storage": url}), *args, **kwargs)

    open_study = tuning._open_study
    monkeypatch.setattr(tuning, "_open_study", opened)
    monkeypatch.setenv("KPIPE_TUNE_STORAGE", "postgresql://ann:s3cret@db.example/kpipe")
    (tmp_path / "space.toml").write_text(SPACE)
    monkeypatch.chdir(tmp_path)
    with caplog.at_level("INFO"):
        assert main(["tune", "sentiment-bigrams", "--space", "space.toml", *TINY, "--set", "training.epochs=1",
                     "--trials", "1", "--pruner", "none"]) == 0
    assert seen["storage"] == "postgresql://ann:s3cret@db.example/kpipe"  # read from the environment
    assert "postgresql://ann:***@db.example/kpipe" in caplog.text and "s3cret" not in caplog.text
