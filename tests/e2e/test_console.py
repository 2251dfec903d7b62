"""What a new user sees: no TensorFlow C++ log lines on a normal run, `kpipe info`, and quiet output into a
closed pipe."""

import json
import re
import subprocess
import sys

import pytest

from kpipe.cli.commands import main
from tests import helpers
from tests.helpers import new_user_env

CPP_LOG_LINE = re.compile(r"^[IWEF]\d{4} ", re.MULTILINE)


def kpipe(*args, cwd, env=None):
    return helpers.kpipe(*args, cwd=cwd, env=new_user_env(env))


@pytest.mark.slow
def test_a_cpu_run_prints_no_tensorflow_cpp_log_lines(shared_run):
    # The BiLSTM with masking is what made TensorFlow log "oneDNN supports DT_BOOL only ..." at the
    # first epoch; importing it logged "failed call to cuInit" on a machine without a GPU. The shared
    # run is made as a new user, without the tests' TF_CPP_MIN_LOG_LEVEL.
    run = shared_run("sentiment-bilstm")
    assert run.returncode == 0, run.stderr[-3000:]
    assert CPP_LOG_LINE.findall(run.stdout + run.stderr) == [], run.stderr[-3000:]
    assert "Training rnn_classifier" in run.stderr  # kpipe's own log lines are still there


@pytest.mark.slow
def test_debug_shows_tensorflows_own_lines_and_info_describes_the_setup(tmp_path, capsys):
    # A real process (TensorFlow's C++ logging is set up once per process); without --debug those lines stay
    # hidden, as the shared run above shows for a whole `kpipe run`.
    debug = kpipe("--debug", "info", "--json", cwd=tmp_path)
    assert debug.returncode == 0 and CPP_LOG_LINE.search(debug.stderr), debug.stderr[-2000:]
    assert json.loads(debug.stdout)["versions"]["kpipe"]
    assert main(["info", "--json"]) == 0  # in-process: the rest of what it says
    info = json.loads(capsys.readouterr().out)
    import tensorflow as tf

    from kpipe.tasks.named_pipelines import registry

    assert info["versions"]["tensorflow"] == tf.__version__ and info["versions"]["kpipe"]
    assert info["devices"]["auto_strategy"] == ("default" if not tf.config.list_physical_devices("GPU") else
                                                info["devices"]["auto_strategy"])
    assert set(info["pipelines"]) == set(registry())
    assert info["pipelines"]["sentiment-transformer"] == {
        "task": "classify", "data": "embedded:tweets-sentiment", "missing": [], "model_download": "",
        "preset_key": "", "runs_offline": True}
    assert info["pipelines"]["sentiment-minilm"] == {
        "task": "classify", "data": "embedded:tweets-sentiment", "missing": [],
        "model_download": "all_minilm_l6_v2_en", "preset_key": "model.preset", "runs_offline": False}
    assert info["data_packages"]["taylor"]["installed"] is True


def test_info_says_which_pipelines_download_a_model(capsys):
    assert main(["info"]) == 0  # in-process: the fresh-process runs of `kpipe info` are above
    lines = capsys.readouterr().out.splitlines()
    line = next(line for line in lines if line.split()[:1] == ["sentiment-minilm"])
    assert line.endswith("downloads the model all_minilm_l6_v2_en on first run (or --set model.preset=FOLDER)")
    line = next(line for line in lines if line.split()[:1] == ["sentiment-minilm-ensemble"])
    assert line.endswith("(or --set model.sequence.preset=FOLDER)")


def test_info_names_what_is_missing(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "tensorflow_text", None)  # installed, but blocked from import (as on Windows)
    assert main(["info", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["versions"]["tensorflow-text"]  # installed, but blocked from import: find_spec says no
    assert info["pipelines"]["sentiment-transformer"]["missing"] == ["tensorflow_text"]
    assert info["pipelines"]["sentiment-transformer"]["runs_offline"] is False
    assert info["pipelines"]["sentiment-bilstm"]["runs_offline"] is True
    assert main(["info"]) == 0
    text = capsys.readouterr().out
    assert re.search(r"sentiment-transformer\s+classify\s+embedded:tweets-sentiment\s+needs tensorflow_text", text)
    assert main(["list"]) == 0  # configs stay valid without it
    assert "sentiment-transformer" in capsys.readouterr().out


def test_output_into_a_closed_pipe_ends_quietly(tmp_path):
    """`kpipe list | head -1`: when the reader has gone, kpipe stops without a BrokenPipeError traceback or
    "Exception ignored" message, whether its output is buffered (a pipe's default) or not."""
    for unbuffered in ({}, {"PYTHONUNBUFFERED": "1"}):
        env = {k: v for k, v in new_user_env().items() if k != "PYTHONUNBUFFERED"} | unbuffered
        process = subprocess.Popen([sys.executable, "-m", "kpipe", "list"], cwd=tmp_path, env=env,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        process.stdout.close()  # before the child has printed anything (it is still importing)
        stderr = process.stderr.read().decode()
        assert process.wait() == 141 and stderr == "", (unbuffered, stderr)
