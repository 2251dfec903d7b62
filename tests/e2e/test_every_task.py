"""The task harness (`task_harness.py`) run on every task: the report holds the task's headline figures, `kpipe
serve` answers as the SavedModel does, an ONNX export answers as the SavedModel where the family exports, and a
command for another task refuses the export by naming the one that answers it."""

import functools
import json
from pathlib import Path

import numpy as np
import pytest

from kpipe.cli.commands import main
from kpipe.tasks.registry import TASKS
from tests.e2e.task_harness import TASK_CASES, inputs_of
from tests.servers import served_in_thread


def test_every_registered_task_has_a_case():
    covered = {case.task for case in TASK_CASES}
    assert set(TASKS) <= covered, f"tasks without a TaskCase in tests/e2e/task_harness.py: {sorted(set(TASKS) - covered)}"


@functools.cache
def loaded(export: Path):
    """The harness run's SavedModel, loaded once per test process for the checks that compare with it (loading
    one costs seconds: the lm's tokenizer graphs, an encoder's weights)."""
    from kpipe.serving.repository import load_version

    return load_version(export)


def at(metrics: dict, dotted: str):
    for key in dotted.split("."):
        metrics = metrics[key]
    return metrics


def as_arrays(inputs: dict) -> dict:
    """JSON inputs as the arrays a loaded signature takes (strings as UTF-8 bytes objects, as the server decodes
    them)."""
    arrays = {name: np.asarray(value) for name, value in inputs.items()}
    encode = np.vectorize(lambda text: text.encode("utf-8"), otypes=[object])
    return {name: encode(array) if array.dtype.kind == "U" else array for name, array in arrays.items()}


def assert_same_outputs(got: dict, expected: dict, tolerance: float, where: str):
    assert sorted(got) == sorted(expected), where
    for name, value in expected.items():
        value, answer = np.asarray(value), np.asarray(got[name])
        if value.dtype.kind in "OSU":
            decoded = np.vectorize(lambda v: v.decode() if isinstance(v, bytes) else v, otypes=[object])
            np.testing.assert_array_equal(decoded(answer), decoded(value), err_msg=f"{where}: {name}")
        else:
            # rtol: a few float32 rounding steps (a forecast of 22,452 differs in its last bits between runtimes
            # on an AMD EPYC: 0.004 apart, 1.8e-7 relative)
            np.testing.assert_allclose(answer, value, atol=tolerance, rtol=1e-6, err_msg=f"{where}: {name}")


@pytest.mark.slow
@pytest.mark.parametrize("case", TASK_CASES, ids=repr)
def test_the_report_holds_the_tasks_headline_figures(case, task_run):
    metrics = json.loads((task_run(case.task).export / "metrics.json").read_text())
    for dotted in TASKS[case.task].headline:
        value = at(metrics, dotted)
        assert (isinstance(value, str) and value) or np.isfinite(float(value)), dotted


@pytest.mark.slow
@pytest.mark.parametrize("case", TASK_CASES, ids=repr)
def test_the_server_answers_as_the_savedmodel(case, task_run):
    run = task_run(case.task)
    inputs = inputs_of(case)
    expected = loaded(run.export).signatures[case.signature](as_arrays(inputs))
    with served_in_thread(f"{case.pipeline}={run.export}", cwd=run.folder) as server:
        status, body = server.post(f"/v1/models/{case.pipeline}:predict",
                                   {"signature_name": case.signature, "inputs": inputs})
    assert status == 200, body
    outputs = body["outputs"] if isinstance(body["outputs"], dict) else {next(iter(expected)): body["outputs"]}
    assert_same_outputs(outputs, expected, case.tolerance, "served")


@pytest.mark.slow
@pytest.mark.parametrize("case", [c for c in TASK_CASES if c.task != "embed"], ids=repr)
def test_an_onnx_export_answers_as_the_savedmodel(case, task_run, task_portable):
    """Every family the registry marks portable; embed's sentence encoder is not."""
    from kpipe.serving.repository import load_version

    run = task_run(case.task)
    family = json.loads((run.export / "kpipe.json").read_text())["family"]
    if not TASKS[case.task].family(family).portable:
        pytest.skip(f"{family} does not export as ONNX")
    raw = case.portable_inputs or inputs_of(case)
    portable = load_version(task_portable(case.task)).signatures[case.signature]
    for inputs, where in ((as_arrays(raw), "onnx"), (as_arrays(no_rows(raw)), "onnx, a batch of no rows")):
        # no rows: what a REST client's empty list sends (onnxruntime's recurrent kernels crashed the process on it)
        expected = loaded(run.export).signatures[case.signature](inputs)
        assert_same_outputs(portable(inputs), expected, max(case.tolerance, 1e-4), where)


def no_rows(inputs: dict) -> dict:
    """The inputs cut to a batch of none (the batched ones: lists; settings such as a count stay)."""
    return {name: value[:0] if isinstance(value, list) else value for name, value in inputs.items()}


@pytest.mark.slow
@pytest.mark.parametrize("case", TASK_CASES, ids=repr)
def test_a_command_for_another_task_names_the_one_that_answers(case, task_run, capsys):
    run = task_run(case.task)
    assert main([part.replace("EXPORT", str(run.export)) for part in case.wrong_command]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and TASKS[case.task].command.replace("EXPORT", str(run.export)) in err[0], err
