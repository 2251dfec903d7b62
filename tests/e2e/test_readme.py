"""The README's Python examples run as written (in a fresh working directory)."""

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"

pytestmark = pytest.mark.slow


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)


def test_readme_python_examples_run(in_tmp_cwd, capsys):
    blocks = python_blocks()
    assert len(blocks) >= 3
    # The API example trains and exports; the serving example then loads that export.
    blocks.sort(key=lambda block: "run_pipeline" not in block)
    for block in blocks:
        exec(compile(block, str(README), "exec"), {"__name__": "readme"})
    out = capsys.readouterr().out
    assert "saved_models/sentiment-bilstm/1" in out
    assert (in_tmp_cwd / "saved_models" / "sentiment-bilstm" / "1" / "saved_model.pb").exists()
