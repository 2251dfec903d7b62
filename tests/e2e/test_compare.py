"""`kpipe compare` on two real tiny runs: the differing config key, both runs' metrics, the curves PNG."""

import json
import shutil

import pytest

from kpipe.cli.compare import differing_keys, flatten, read_runs
from kpipe.tasks.named_pipelines import load_pipeline
from kpipe.tasks.runner import run_pipeline
from tests.helpers import kpipe

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("compare")
    for rate in ("0.01", "0.003"):  # trained in-process: only `kpipe compare` is under test here
        run_pipeline(load_pipeline("sentiment-bigrams", [
            "data.limit=600", "training.epochs=2", f"training.learning_rate={rate}", "evaluation.baseline=false",
            f'export.dir="{folder / "saved_models"}"']))
    return folder


def test_compare_shows_each_runs_metrics_and_the_key_that_differs(two_runs):
    run = kpipe("compare", "sentiment-bigrams", "--out", "curves.png", cwd=two_runs)
    assert run.returncode == 0, run.stderr[-2000:]
    lines = run.stdout.splitlines()
    assert lines[0].split() == ["run", "accuracy", "macro_f1", "baseline.accuracy", "epochs", "train", "s",
                                "training.learning_rate"]
    for version, rate in (("1", "0.01"), ("2", "0.003")):
        metrics = json.loads((two_runs / "saved_models" / "sentiment-bigrams" / version / "metrics.json").read_text())
        row = next(line.split() for line in lines if line.startswith(f"sentiment-bigrams/{version} "))
        assert row[1] == f"{metrics['accuracy']:.4g}" and row[2] == f"{metrics['macro_f1']:.4g}"
        assert row[3] == "-" and row[-1] == rate  # the baseline was off
    assert (two_runs / "curves.png").stat().st_size > 10_000


def test_differing_keys_and_flatten():
    assert flatten({"a": {"b": 1, "c": {"d": [1, 2]}}, "e": "x"}) == {"a.b": 1, "a.c.d": [1, 2], "e": "x"}


def test_runs_of_different_tasks_or_a_single_run_are_one_line_exit_2(two_runs, tmp_path):
    export = two_runs / "saved_models" / "sentiment-bigrams" / "1"
    forecaster = tmp_path / "forecaster"
    forecaster.mkdir()
    (forecaster / "saved_model.pb").write_bytes(b"")
    (forecaster / "kpipe.json").write_text(json.dumps({"task": "forecast", "pipeline": "electricity-seasonal-ar"}))
    (forecaster / "metrics.json").write_text("{}")
    for args, message in (([str(export), str(forecaster)], "these runs are of different tasks (classify: "
                           "sentiment-bigrams/1; forecast: electricity-seasonal-ar/forecaster); compare runs of one task"),
                          ([str(export)], "compare needs at least two runs")):
        run = kpipe("compare", *args, cwd=tmp_path)
        assert run.returncode == 2 and run.stderr.startswith("kpipe: error: " + message), run.stderr
        assert len(run.stderr.strip().splitlines()) == 1
    runs = read_runs([str(export), str(export.parent / "2")])
    assert differing_keys(runs) == ["training.learning_rate"]


def test_runs_with_the_same_name_from_different_folders_are_told_apart_by_their_paths(two_runs, tmp_path):
    copy = tmp_path / "elsewhere" / "sentiment-bigrams" / "1"
    shutil.copytree(two_runs / "saved_models" / "sentiment-bigrams" / "2", copy)
    runs = read_runs([str(two_runs / "saved_models" / "sentiment-bigrams" / "1"), str(copy)])
    assert [run.label for run in runs] == [str(two_runs / "saved_models" / "sentiment-bigrams" / "1"), str(copy)]
    assert read_runs(["sentiment-bigrams"], two_runs / "saved_models")[0].label == "sentiment-bigrams/1"
