"""The README's and the documentation's examples, as a user would run them: every Python block runs as written
(in a fresh working directory), every `kpipe` command in a shell block parses with kpipe's own parser and, for
`run`, `show` and `tune`, its config (pipeline, --data, --set) passes every check; `list` and `show` run for
real. The site builds with `mkdocs build --strict`, and its generated reference pages match the code."""

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from kpipe.cli.commands import config_overrides, main
from kpipe.cli.parser import build_parser
from kpipe.tasks.named_pipelines import load_pipeline

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md"] + sorted(p for p in (ROOT / "docs").rglob("*.md") if "reference" not in p.parts)
# Files the examples name as the user's own, which a checkout does not have.
USERS_FILES = {"my-pipeline.toml", "saved_models/sentiment-bilstm/tune/best.toml", "best.toml"}
# The pretrained checkpoint folder the examples name (all-MiniLM-L6-v2): a tiny preset stands in for it.
USERS_CHECKPOINTS = ("/models/all-MiniLM-L6-v2", "/path/to/all-MiniLM-L6-v2")


def blocks(language: str) -> list[tuple[Path, str]]:
    return [(page, block) for page in PAGES
            for block in re.findall(rf"```{language}\n(.*?)```", page.read_text(encoding="utf-8"), flags=re.S)]


def kpipe_commands() -> list[tuple[Path, str]]:
    """Every `kpipe ...` command of the shell blocks (continuation lines joined, `;` and `&&` split, comments and
    environment assignments dropped)."""
    commands = []
    for page, block in blocks("bash"):
        for line in block.replace("\\\n", " ").splitlines():
            for part in re.split(r";|&&", line.split("#")[0]):
                words = shlex.split(part)
                while words and re.match(r"^[A-Z_]+=", words[0]):  # CUDA_VISIBLE_DEVICES=0,1 kpipe ...
                    words = words[1:]
                if words and words[0] == "kpipe":
                    commands.append((page, " ".join(shlex.quote(w) for w in words[1:])))
    return commands


def test_the_pages_have_examples():
    assert len(blocks("python")) >= 8 and len(kpipe_commands()) >= 60


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """A tiny BERT preset with MiniLM's 512 positions (the pipelines' sequence lengths are checked against it)."""
    import keras_hub

    from tests.checkpoints import VOCABULARY

    folder = str(tmp_path_factory.mktemp("checkpoint") / "preset")
    keras_hub.models.BertBackbone(vocabulary_size=len(VOCABULARY), num_layers=1, num_heads=2, hidden_dim=8,
                                  intermediate_dim=16, max_sequence_length=512).save_to_preset(folder)
    keras_hub.models.BertTokenizer(vocabulary=VOCABULARY, lowercase=True).save_to_preset(folder)
    return folder


@pytest.mark.parametrize("page, command", kpipe_commands(), ids=lambda x: x if isinstance(x, str) else x.name)
def test_every_kpipe_command_of_the_docs_parses_and_its_config_passes_every_check(page, command, checkpoint, capsys):
    for placeholder in USERS_CHECKPOINTS:
        command = command.replace(placeholder, checkpoint)
    words = shlex.split(command)
    if words in (["--help"], ["run", "--help"]):
        return  # argparse prints and exits: parsed by every other case
    args = build_parser().parse_args(words)
    if args.command in ("run", "show", "tune") and args.pipeline not in USERS_FILES:
        load_pipeline(args.pipeline, config_overrides(args))
        if args.command == "show":
            assert main(words) == 0, capsys.readouterr().err
    elif args.command == "list":
        assert main(words) == 0, capsys.readouterr().err


@pytest.fixture
def runs_of_the_session(shared_run, task_run, monkeypatch):
    """`run_pipeline` that, for a config equal to one of the session's runs (the shared runs of tests/conftest.py,
    the task harness's runs without data files), publishes a copy of that run's export instead of training it
    again (the README's quick run is exactly one); any other config trains as written."""
    import shutil

    import kpipe.tasks.runner
    from kpipe.config.pipeline import RunResult
    from kpipe.exports.versions import write_version
    from tests.conftest import SHARED_RUNS
    from tests.e2e.task_harness import TASK_CASES

    train = kpipe.tasks.runner.run_pipeline
    runs = {name: (name, overrides, lambda name=name: shared_run(name).folder / "saved_models" / name / "1")
            for name, overrides in SHARED_RUNS.items()}
    runs.update({case.task: (case.pipeline, case.arguments, lambda task=case.task: task_run(task).export)
                 for case in TASK_CASES if not case.shared and not case.prepare})
    shared = {load_pipeline(pipeline, [o for o in overrides if o != "--set"]).fingerprint(): export
              for pipeline, overrides, export in runs.values()}

    resolving = []  # a session run not trained yet trains through run_pipeline itself: that call trains

    def run_pipeline(config):
        export = shared.get(config.fingerprint())
        if export is None or resolving:
            return train(config)
        resolving.append(config.name)
        try:
            source = export()
        finally:
            resolving.pop()
        root = Path(config.export.dir) / config.name
        folder = write_version(root, lambda tmp: shutil.copytree(source, tmp, dirs_exist_ok=True))
        return RunResult(folder, json.loads((folder / "metrics.json").read_text()), "")

    monkeypatch.setattr(kpipe.tasks.runner, "run_pipeline", run_pipeline)


@pytest.mark.slow  # trains what the examples train that no other test has trained
def test_python_examples_run(in_tmp_cwd, capsys, runs_of_the_session):
    found = blocks("python")
    # The examples that train and export run first; the ones that load an export after them.
    found.sort(key=lambda item: "run_pipeline" not in item[1])
    for page, block in found:
        exec(compile(block, str(page), "exec"), {"__name__": "docs"})
    out = capsys.readouterr().out
    assert "saved_models/sentiment-bilstm/1" in out
    assert (in_tmp_cwd / "saved_models" / "sentiment-bilstm" / "1" / "saved_model.pb").exists()


@pytest.mark.slow  # mkdocs builds the whole site
def test_the_site_builds_strictly_and_its_reference_pages_match_the_code(tmp_path):
    check = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_docs.py"), "--check"],
                           capture_output=True, text=True, timeout=120)
    assert check.returncode == 0, check.stderr
    built = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"),
                            "-d", str(tmp_path / "site")], capture_output=True, text=True, timeout=300,
                           env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert built.returncode == 0, built.stderr[-3000:]
    assert (tmp_path / "site" / "reference" / "configuration" / "index.html").exists()
