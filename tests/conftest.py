"""Shared fixtures (the helpers they use: tests/helpers.py, checkpoints.py, made_up_data.py, clusters.py, servers.py). No
test touches the network."""

import atexit
import dataclasses
import json
import os
import shutil
import tempfile
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# One thread per operation in every TensorFlow process a test starts (subprocesses inherit it): the two xdist
# workers, and the commands and cluster workers they start, already keep the 2 cores busy, and the small models
# here gain nothing from splitting an operation (the whole suite: 698 s with one thread, 725 s with TF's default).
os.environ.setdefault("TF_NUM_INTRAOP_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
# Parsed word-vector files and fitted vocabularies are cached per user (kpipe.cache): the tests' copies go to
# a folder of their own (subprocesses inherit it), not into the developer's ~/.cache. Both xdist workers of
# one session share it (kpipe writes cache entries atomically), so a GloVe parse or a WordPiece fit that
# several files need is done once per session, not once per worker.
# The process that makes the folder (pytest's, whose workers inherit it) removes it when it exits.
if "KPIPE_CACHE_DIR" not in os.environ:
    os.environ["KPIPE_CACHE_DIR"] = tempfile.mkdtemp(prefix="kpipe-test-cache-")
    atexit.register(shutil.rmtree, os.environ["KPIPE_CACHE_DIR"], ignore_errors=True)

from kpipe.cache import keep_xla_programs  # noqa: E402  (after KPIPE_CACHE_DIR: it names the folder)

# XLA's compiled programs go to that folder too, for every worker and every command a test starts: a classifier
# export compiled by one test (once per batch size) is not compiled again by the next (about 70 CPU-s a session).
keep_xla_programs()

import filelock
import pytest

from tests.helpers import kpipe, kpipe_in_process, new_user_env
from tests.made_up_data import synthetic_reviews

# Small runs that several test files read: trained once per test session, whichever xdist worker asks first.
SHARED_RUNS = {
    "sentiment-bilstm": ("--set", "training.epochs=1", "--set", "data.limit=600"),
    "sentiment-bigrams": ("--set", "data.limit=800", "--set", "training.epochs=1", "--set", "model.max_features=3000",
                          "--set", 'model.weighting="tfidf"', "--set", "model.hidden_units=8"),
    # the quick run of docs/tasks/classify.md, read by tests/e2e/test_transformer_end_to_end.py
    "sentiment-transformer": ("--set", "data.limit=1500", "--set", "training.epochs=1"),
}

# The README's quick run is a real process, as a new user runs it (its output is checked for TensorFlow's noise);
# the others run in the test process (a fresh process costs a TensorFlow start-up).
AS_A_NEW_USER = {"sentiment-bilstm"}


@dataclasses.dataclass(frozen=True)
class SharedRun:
    """`kpipe run NAME` done in `folder` (in AS_A_NEW_USER: a real process without the tests'
    TF_CPP_MIN_LOG_LEVEL): its exit code and output (stderr: the real process's only). Read it only; a test that
    writes beside it works on `copy_to(folder)`."""

    folder: Path
    returncode: int
    stdout: str
    stderr: str

    def copy_to(self, folder: Path) -> Path:
        """The run's saved_models/ copied into `folder` (the run must have succeeded)."""
        assert self.returncode == 0, self.stderr[-3000:]
        shutil.copytree(self.folder / "saved_models", folder / "saved_models", dirs_exist_ok=True)
        return folder


@pytest.fixture(scope="session")
def once_per_session(tmp_path_factory, worker_id):
    """`once_per_session(key, make)`: `make(folder)` run in a folder of its own by whichever xdist worker asks first
    (the others wait for it), its JSON-able record kept for every later ask: (folder, record)."""
    # Under xdist every worker has its own basetemp inside one session folder: the runs live there.
    root = tmp_path_factory.getbasetemp() if worker_id == "master" else tmp_path_factory.getbasetemp().parent

    def get(key: str, make) -> tuple[Path, dict]:
        folder, record = root / key, root / f"{key}.json"
        with filelock.FileLock(str(root / f"{key}.lock")):
            if not record.exists():
                folder.mkdir()
                record.write_text(json.dumps(make(folder)))
        return folder, json.loads(record.read_text())

    return get


@pytest.fixture(scope="session")
def tweet_wordpieces() -> list[str]:
    """A WordPiece vocabulary of the tweets (tests/made_up_data.py: `tweet_wordpieces`), for the tests that pin one
    WordPiece tokenizer against another on real text."""
    from tests.made_up_data import tweet_wordpieces

    return tweet_wordpieces()


@pytest.fixture(scope="session")
def shared_run(once_per_session):
    def train(name: str, folder: Path) -> dict:
        if name in AS_A_NEW_USER:
            run = kpipe("run", name, *SHARED_RUNS[name], cwd=folder, env=new_user_env())
            return {"returncode": run.returncode, "stdout": run.stdout, "stderr": run.stderr}
        code, printed = kpipe_in_process("run", name, *SHARED_RUNS[name], cwd=folder)
        return {"returncode": code, "stdout": printed, "stderr": ""}  # its log lines went to the test's stderr

    def get(name: str) -> SharedRun:
        folder, record = once_per_session(f"shared-{name}", lambda folder: train(name, folder))
        return SharedRun(folder, **record)

    return get


@pytest.fixture(scope="session")
def task_run(once_per_session, shared_run):
    """`task_run(task)`: the task harness's run of `task` (tests/e2e/task_harness.py), trained once per session by
    whichever xdist worker asks first. Read it only; a test that writes beside it works on a copy."""
    from tests.e2e.task_harness import CASES, TaskRun

    def get(task: str) -> TaskRun:
        case = CASES[task]
        if case.shared:
            run = shared_run(case.shared)
            assert run.returncode == 0, run.stderr[-3000:]
            return TaskRun(run.folder, run.folder / "saved_models" / case.pipeline / "1", run.stdout)
        folder, record = once_per_session(f"task-{task}", lambda folder: {"printed": case.train(folder).printed})
        return TaskRun(folder, folder / "saved_models" / case.pipeline / "1", record["printed"])

    return get


@pytest.fixture(scope="session")
def task_portable(once_per_session, task_run):
    """`task_portable(task, fmt="onnx", quantize="none")`: the portable export of the task harness's run of `task`
    (of a copy, so the run's folder holds its SavedModel alone), written once per session: the harness's check and
    the task's own portable tests read the same one. Read it only."""
    def get(task: str, fmt: str = "onnx", quantize: str = "none") -> Path:
        def export(folder: Path) -> dict:
            from kpipe.exports.portable import export_portable

            source = folder / "1"
            shutil.copytree(task_run(task).export, source)
            return {"portable": str(export_portable(source, fmt, quantize))}

        return Path(once_per_session(f"portable-{task}-{fmt}-{quantize}", export)[1]["portable"])

    return get


@pytest.fixture
def reviews_csv(tmp_path):
    path = tmp_path / "reviews.csv"
    synthetic_reviews(400).to_csv(path, index=False)
    return path


@pytest.fixture
def in_tmp_cwd(tmp_path, monkeypatch):
    """Run in an empty working directory, so `saved_models/` lands in tmp_path."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


# Files handed to the xdist workers slowest first (longest-first scheduling, so that neither worker is left
# running a long file alone at the end), by the seconds each took in the last run recorded with
# `python -m pytest --record-durations` (tests/durations.json: setup, call and teardown summed per file). Files
# not recorded yet (new ones) go first: a new file is more often slow than not, and a slow file last leaves one
# worker running it alone. pyproject's --no-loadscope-reorder keeps this order: by default xdist would reorder
# the files by how many tests each holds.
DURATIONS = Path(__file__).parent / "durations.json"


def pytest_addoption(parser):
    parser.addoption("--record-durations", action="store_true",
                     help=f"write each test file's summed seconds to {DURATIONS.name} (the order of the next runs)")


def pytest_collection_modifyitems(config, items):
    recorded = json.loads(DURATIONS.read_text()) if DURATIONS.is_file() else {}
    items.sort(key=lambda item: -recorded.get(item.nodeid.split("::")[0], float("inf")))


_seconds: dict[str, float] = {}


def pytest_runtest_logreport(report):
    # On the xdist controller this sees every worker's reports (and on a plain run, its own).
    _seconds[report.nodeid.split("::")[0]] = _seconds.get(report.nodeid.split("::")[0], 0.0) + report.duration


def pytest_sessionfinish(session):
    if session.config.getoption("--record-durations") and not hasattr(session.config, "workerinput"):
        recorded = json.loads(DURATIONS.read_text()) if DURATIONS.is_file() else {}
        recorded.update({path: round(seconds, 1) for path, seconds in _seconds.items()})
        recorded = {path: s for path, s in recorded.items() if (session.config.rootpath / path).exists()}
        DURATIONS.write_text(json.dumps(dict(sorted(recorded.items(), key=lambda kv: -kv[1])), indent=1) + "\n")
