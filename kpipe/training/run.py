"""One run of a pipeline config: what every task shares, so a task keeps only its own logic.

A `Run` is made once from the config, first thing in a task's `run_*` function. It owns the
tf.distribute strategy and the global batch size, the work folder with its lock and resume state,
the training time, the metrics every report has, and publishing the export as a new version.

    with Run(config) as run:
        ...load data, build datasets with run.global_batch...
        model, history = run.train(build, loss=..., metrics=[...], train_data=..., validation_data=...)
        ...evaluate...
        metrics = {**run.common_metrics(history), ...task metrics...}
        version_dir = run.publish(lambda folder: write_my_export(folder, ...))

Two processes never share a work folder: the second run of a config whose run is alive stops at
once with one line naming the other process (`RunInProgressError`, exit 2). The lock is the
operating system's (`filelock`), so a run killed with SIGKILL releases it, and the next run of
the config resumes from its last finished epoch.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from pathlib import Path
from typing import Callable, Iterable

import filelock
import keras

from kpipe.exports import manifest, run_files, versions
from kpipe.errors import KpipeError
from kpipe.training.multi_worker import is_chief
from kpipe.config.pipeline import PipelineConfig
from kpipe.training.loop import make_strategy, train_model


class RunInProgressError(KpipeError):
    """Another process is running the same config in the same export folder."""


class Run:
    """Strategy, work folder and lock, timing, common metrics and publishing for one run of `config`.

    Attributes:
        config: the pipeline config.
        strategy: from `kpipe.training.loop.make_strategy` (made before anything else touches TensorFlow).
        global_batch: `training.batch_size` times the replicas in sync.
        export_root: `<export.dir>/<name>`, where versions are published.
        work_dir: `<export_root>/.work/<config fingerprint>`: resume state while the run is alive.
        chief: whether this process writes state and exports (always, outside multi-worker runs).
    """

    def __init__(self, config: PipelineConfig):
        self.config = config
        training = config.training
        self.strategy = make_strategy(training.strategy, worker_timeout_s=training.worker_timeout_s)
        self.global_batch = training.batch_size * self.strategy.num_replicas_in_sync
        self.chief = is_chief(self.strategy)
        self.export_root = Path(config.export.dir) / config.name
        fingerprint = config.fingerprint()
        self.work_dir = self.export_root / ".work" / fingerprint
        # The lock and its owner note live outside the work folder, which a finished run deletes (a
        # lock file deleted while another process waits on it would let a third one in).
        self._lock_path = self.export_root / ".locks" / f"{fingerprint}.lock"
        self._owner_path = self.export_root / ".locks" / f"{fingerprint}.owner.json"
        self._lock: filelock.BaseFileLock | None = None
        self.train_seconds = 0.0
        # Seeded before the task builds its datasets: their shuffle seeds combine with the global one.
        keras.utils.set_random_seed(training.seed)

    # === The lock ===
    def __enter__(self) -> "Run":
        if self.chief:  # other workers only read the chief's state
            self._acquire()
        return self

    def __exit__(self, exc_type, *exc) -> None:
        if self._lock is None:
            return
        self._owner_path.unlink(missing_ok=True)
        if exc_type is not None and not self.work_dir.exists():
            # Failed before writing anything (bad data, say): leave no trace of the run either.
            # The lock file goes before the lock is released; `_acquire` checks that the file it
            # locked is still the one at the path, so a process that opened it just before cannot win.
            self._lock_path.unlink(missing_ok=True)
            self._lock.release()
            for folder in (self._lock_path.parent, self.export_root, self.export_root.parent):
                try:
                    folder.rmdir()  # only if empty
                except OSError:
                    break
        else:
            self._lock.release()
        self._lock = None

    def _acquire(self) -> None:
        for _ in range(10):
            self._lock_path.parent.mkdir(parents=True, exist_ok=True)
            lock = filelock.FileLock(str(self._lock_path), timeout=0)
            try:
                lock.acquire()
            except filelock.Timeout:
                raise RunInProgressError(
                    f"another run of this config is in progress ({self._owner()}; work folder {self.work_dir}); "
                    "wait for it to finish, stop it, or run a different config beside it (e.g. --set "
                    "training.seed=2)") from None
            if _locks_the_file_at(lock, self._lock_path):
                break
            lock.release()  # locked a file another run had just removed: try the new one
        self._lock = lock
        self._owner_path.write_text(json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                                                "started": time.strftime("%Y-%m-%d %H:%M:%S"),
                                                "command": " ".join(sys.argv)}), encoding="utf-8")

    def _owner(self) -> str:
        try:
            owner = json.loads(self._owner_path.read_text(encoding="utf-8"))
            return f"process {owner['pid']} on {owner['host']}, started {owner['started']}"
        except (OSError, ValueError, KeyError):
            return "a process that is just starting"

    # === Training ===
    def train(self, build: Callable[[], keras.Model], *, subdir: str = "", **kwargs):
        """`kpipe.training.loop.train_model` under this run's strategy, config and work folder (or a
        sub-folder of it, for an extra training stage such as pretraining); timed.

        Returns:
            (model, history), as `train_model`.
        """
        kwargs.setdefault("config", self.config.training)
        started = time.perf_counter()
        try:
            return train_model(build, work_dir=self.work_dir / subdir if subdir else self.work_dir,
                               strategy=self.strategy, **kwargs)
        finally:
            self.train_seconds += time.perf_counter() - started

    def common_metrics(self, history: list[dict]) -> dict:
        """What every report holds: the pipeline, epochs, training time and per-epoch history."""
        return {"pipeline": self.config.name, "epochs_trained": len(history),
                "train_seconds_this_run": round(self.train_seconds, 2),
                "epoch_seconds": [round(h.get("epoch_seconds", float("nan")), 2) for h in history],
                "history": history}

    # === Publishing ===
    def publish(self, write: Callable[[Path], None], *, data: Iterable = ()) -> Path:
        """Write the export with `write(folder)`, add its manifest (`kpipe.json`: the task, family,
        versions and a fingerprint of the training `data`), publish it as the next version, then
        delete the resume state. Returns the version folder."""
        def write_with_manifest(folder: Path) -> None:
            write(folder)
            manifest.update(folder, pipeline=self.config.name, task=self.config.task,
                            family=getattr(self.config.model, "family", ""), kpipe_version=manifest.kpipe_version(),
                            config_fingerprint=self.config.fingerprint(), data_fingerprint=manifest.fingerprint(data))

        version_dir = versions.write_version(self.export_root, write_with_manifest, chief=self.chief)
        run_files.finish_run(self.work_dir, chief=self.chief)
        return version_dir


def _locks_the_file_at(lock: filelock.BaseFileLock, path: Path) -> bool:
    """Whether the file `lock` holds is the one now at `path` (not one unlinked meanwhile)."""
    fd = getattr(getattr(lock, "_context", None), "lock_file_fd", None)
    if fd is None:  # another filelock version: cannot tell, trust it
        return True
    try:
        return os.fstat(fd).st_ino == os.stat(path).st_ino
    except OSError:
        return False


