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
once with one line naming the other process (`kpipe.training.run_lock`, exit 2). A run killed
with SIGKILL releases the lock, and the next run of the config resumes from its last finished epoch.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable, Iterable

import keras

from kpipe.exports import manifest, run_files, versions
from kpipe.training.multi_worker import is_chief
from kpipe.config.pipeline import PipelineConfig
from kpipe.config.training import TrainingConfig
from kpipe.training.loop import check_jit_compile, make_strategy, train_model
from kpipe.training import run_identity
from kpipe.training.run_lock import RunLock


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
        check_jit_compile(training, self.strategy)  # before any data is read (train_model checks members' tables)
        self.global_batch = self.batch_of(training)
        self.chief = is_chief(self.strategy)
        self._lock = RunLock.of(config)
        self.export_root, self.work_dir = self._lock.export_root, self._lock.work_dir
        self.train_seconds = 0.0
        self.run_id = ""  # set when training starts (run_identity); published in kpipe.json
        # Seeded before the task builds its datasets: their shuffle seeds combine with the global one.
        keras.utils.set_random_seed(training.seed)

    def batch_of(self, training: TrainingConfig) -> int:
        """The global batch of a model trained with `training` (an ensemble member may have a table of its own)."""
        return training.batch_size * self.strategy.num_replicas_in_sync

    def worker(self):
        """This process's part of streamed data: `kpipe.datasets.streamed_text.Worker` (index, count)."""
        from kpipe.datasets.streamed_text import Worker

        if self.config.training.strategy != "multi_worker":
            return Worker()
        from kpipe.config.cluster import read_tf_config, worker_position

        return Worker(*worker_position(read_tf_config()))

    # === The lock ===
    def __enter__(self) -> "Run":
        if self.chief:  # other workers only read the chief's state
            self._lock.acquire()
            try:
                run_identity.check_rerun(self.work_dir, getattr(self.config.data, "path", ""), self.export_root,
                                         run_files.trash_of(self.work_dir))
            except run_identity.AlreadyPublishedError:
                run_files.finish_run(self.work_dir)  # what the killed run had left to do
                run_files.remove_trash(self.work_dir)
                self._lock.release()
                raise
            except BaseException:
                self._lock.release()
                raise
            run_files.remove_trash(self.work_dir)
        return self

    def __exit__(self, exc_type, *exc) -> None:
        # Failed before writing anything (bad data, say): leave no trace of the run either.
        self._lock.release(remove=exc_type is not None and not self.work_dir.exists())

    # === Training ===
    def train(self, build: Callable[[], keras.Model], *, subdir: str = "", **kwargs):
        """`kpipe.training.loop.train_model` under this run's strategy, config and work folder (or a
        sub-folder of it, for an extra training stage such as pretraining); timed.

        Returns:
            (model, history), as `train_model`.
        """
        kwargs.setdefault("config", self.config.training)
        if self.chief:
            self.run_id = run_identity.start(self.work_dir, getattr(self.config.data, "path", ""))
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
                            config_fingerprint=self.config.fingerprint(), data_fingerprint=manifest.fingerprint(data),
                            run_id=self.run_id)

        version_dir = versions.write_version(self.export_root, write_with_manifest, chief=self.chief)
        run_files.finish_run(self.work_dir, chief=self.chief)
        return version_dir
