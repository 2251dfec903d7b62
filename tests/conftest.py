"""Shared fixtures (helpers are in tests/helpers.py). No test touches the network."""

import dataclasses
import json
import os
import shutil
import tempfile
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# Parsed word-vector files and fitted vocabularies are cached per user (kpipe.cache): the tests' copies go to
# a folder of their own (subprocesses inherit it), not into the developer's ~/.cache. Both xdist workers of
# one session share it (kpipe writes cache entries atomically), so a GloVe parse or a WordPiece fit that
# several files need is done once per session, not once per worker.
_SESSION = os.environ.get("PYTEST_XDIST_TESTRUNUID")
os.environ.setdefault("KPIPE_CACHE_DIR", os.path.join(tempfile.gettempdir(), f"kpipe-test-cache-{_SESSION}")
                      if _SESSION else tempfile.mkdtemp(prefix="kpipe-test-cache-"))

from kpipe.cache import keep_xla_programs  # noqa: E402  (after KPIPE_CACHE_DIR: it names the folder)

# XLA's compiled programs go to that folder too, for every worker and every command a test starts: a classifier
# export compiled by one test (once per batch size) is not compiled again by the next (about 70 CPU-s a session).
keep_xla_programs()

import filelock
import pytest

from tests.helpers import kpipe, new_user_env, synthetic_reviews

# Small runs that several test files read: trained once per test session, whichever xdist worker asks first.
SHARED_RUNS = {
    "sentiment-bilstm": ("--set", "training.epochs=1", "--set", "data.limit=600"),
    "sentiment-bigrams": ("--set", "data.limit=800", "--set", "training.epochs=1", "--set", "model.max_features=3000",
                          "--set", 'model.weighting="tfidf"', "--set", "model.hidden_units=8"),
}


@dataclasses.dataclass(frozen=True)
class SharedRun:
    """`kpipe run NAME` done in `folder` (as a new user, without the tests' TF_CPP_MIN_LOG_LEVEL): its
    exit code and output. Read it only; a test that writes beside it works on `copy_to(folder)`."""

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
def shared_run(tmp_path_factory, worker_id):
    # Under xdist every worker has its own basetemp inside one session folder: the runs live there.
    root = tmp_path_factory.getbasetemp() if worker_id == "master" else tmp_path_factory.getbasetemp().parent

    def get(name: str) -> SharedRun:
        folder, record = root / f"shared-{name}", root / f"shared-{name}.json"
        with filelock.FileLock(str(root / f"shared-{name}.lock")):
            if not record.exists():
                folder.mkdir()
                run = kpipe("run", name, *SHARED_RUNS[name], cwd=folder, env=new_user_env())
                record.write_text(json.dumps({"returncode": run.returncode, "stdout": run.stdout,
                                              "stderr": run.stderr}))
        return SharedRun(folder, **json.loads(record.read_text()))

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
# running a long file alone at the end), by their summed --durations on 2026-11-28 (seconds in the comments);
# the other files follow in their usual order. pyproject's --no-loadscope-reorder keeps this order: by default
# xdist would reorder the files by how many tests each holds.
SLOWEST_FIRST = [
    "tests/e2e/distribution/test_multi_worker_pipelines.py",  # 99
    "tests/e2e/test_docs.py",  # ~100 (2026-12-02: the README test, now every docs page)
    "tests/e2e/test_translate_ensemble.py",  # 90
    "tests/e2e/test_tune.py",  # 86
    "tests/e2e/test_serve.py",  # 76
    "tests/e2e/distribution/test_multi_worker.py",  # 76
    "tests/e2e/test_runs.py",  # 68
    "tests/e2e/test_kill_windows.py",  # ~35 (2026-12-01, new)
    "tests/e2e/test_text_pairs.py",  # ~95 (2026-12-02, new)
    "tests/e2e/test_translate_sentences.py",  # ~40 (2026-12-02, new)
    "tests/e2e/test_multi_label.py",  # ~45 (2026-12-01, new)
    "tests/e2e/distribution/test_multi_worker_shards.py",  # ~55 (2026-12-02, new)
    "tests/e2e/test_streaming.py",  # ~35 (2026-12-02, new)
    "tests/unit/datasets/test_streamed_text.py",  # ~27 (2026-12-02, new)
    "tests/e2e/test_translate_end_to_end.py",  # 65
    "tests/e2e/test_transformer_end_to_end.py",  # 61
    "tests/e2e/test_pretrained_pipeline.py",  # 55
    "tests/unit/families/test_seq2seq.py",  # 54
    "tests/e2e/test_forecast_end_to_end.py",  # 52
    "tests/unit/training/test_training.py",  # 51
    "tests/e2e/test_end_to_end.py",  # 44
    "tests/e2e/test_transformer_pretraining.py",  # 44
    "tests/e2e/test_precision_end_to_end.py",  # 35
    "tests/e2e/test_names_end_to_end.py",  # 31
    "tests/e2e/test_ngrams_end_to_end.py",  # 30
    "tests/e2e/test_sentence_encoder.py",  # 29
    "tests/unit/families/test_transformer_classifier.py",  # 27
    "tests/unit/training/test_exact_resume.py",  # 26
    "tests/unit/exports/test_custom_layers.py",  # 19
    "tests/e2e/test_console.py",  # 18
    "tests/e2e/test_cli.py",  # 18
    "tests/e2e/test_batch_predict.py",  # 18
    "tests/e2e/test_missing_packages.py",  # 18
    "tests/unit/pretrained/test_fine_tuning.py",  # 17
    "tests/unit/pretrained/test_families.py",  # 16
    "tests/unit/datasets/test_text_classification.py",  # 12
    "tests/e2e/test_compare.py",  # 11
    "tests/e2e/test_disk_full.py",  # ~15 (2026-12-01: the real tmpfs case added)
    "tests/unit/serving/test_repository.py",  # ~8 (2026-12-01, new)
    "tests/unit/serving/test_rest_limits.py",  # ~6 (2026-12-01, new)
    "tests/unit/families/test_char_transformer.py",  # 10
]


def pytest_collection_modifyitems(config, items):
    rank = {path: i for i, path in enumerate(SLOWEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))
