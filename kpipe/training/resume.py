"""Exact resume after a kill: everything the rest of a training depends on, saved at each epoch's end.

`keras.callbacks.BackupAndRestore` keeps the weights and the epoch number, which is not enough for a
resumed run to end as the uninterrupted one would: early stopping's best value, wait counter and
best weights, the dropout seeds (Keras `SeedGenerator` states) and the shuffling order of the
training data are lost. `EpochCheckpoint` saves all of them, into a new folder per epoch that is
renamed into place (a kill during a save leaves the previous epoch's checkpoint whole), and on the
next run restores them before the first epoch.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import uuid
from pathlib import Path

import keras
import numpy as np

from kpipe.atomic import fsync_folder, fsync_tree
from kpipe.exports import keras_private

log = logging.getLogger(__name__)

STATE_FILE = "state.json"
ARRAYS_FILE = "arrays.npz"


class ResumableEarlyStopping(keras.callbacks.EarlyStopping):
    """`EarlyStopping` whose progress (best value and weights, wait, stop) can be saved and restored."""

    def state(self) -> dict:
        return {"wait": self.wait, "stopped_epoch": self.stopped_epoch, "best_epoch": self.best_epoch,
                "best": None if self.best is None else float(self.best)}

    def restore(self, state: dict, best_weights: list[np.ndarray] | None) -> None:
        self.wait, self.stopped_epoch, self.best_epoch = state["wait"], state["stopped_epoch"], state["best_epoch"]
        self.best = state["best"]
        self.best_weights = best_weights


def checkpoints(directory: Path) -> list[Path]:
    """The finished checkpoints in `directory`, oldest first (partial ones are skipped)."""
    if not directory.is_dir():
        return []
    return sorted(p for p in directory.iterdir() if p.name.startswith("epoch-") and (p / STATE_FILE).is_file())


class EpochCheckpoint(keras.callbacks.Callback):
    """Saves the training state at each epoch's end and restores the newest one when training begins.

    Saved: every model variable (weights and dropout seed states), the optimizer's variables (its
    step count included), early stopping's state and best weights, and the per-epoch logs. On
    restore, the training dataset is fast-forwarded past the finished epochs: creating an
    iterator advances its shuffle seed (nothing is read), so epoch k sees the order it would have
    seen. How many iterators a training loop creates per epoch is the loop's own business: Keras'
    `fit` makes two for a dataset of known size (it opens the next epoch's at the end of each
    epoch, then opens another) and one otherwise; `tests/test_exact_resume.py` pins this.

    Args:
        directory: where checkpoints live (`epoch-0003/` holds the state after epoch 3).
        write: whether this process writes checkpoints (in a multi-worker run, only the chief).
        train_data: the training dataset to fast-forward on restore.
        iterators_per_epoch: how many iterators the training loop creates per epoch.
        initial_epoch: the epoch this training phase starts at (the `initial_epoch` given to fit).
        early_stopping: the run's early stopping callback, if any; it must come before this
            callback in the callback list, so its state is updated before it is saved.
    """

    def __init__(self, directory: Path, *, write: bool = True, train_data=None, iterators_per_epoch: int = 1,
                 initial_epoch: int = 0, early_stopping: ResumableEarlyStopping | None = None):
        super().__init__()
        self.directory = Path(directory)
        self.write = write
        self.train_data = train_data
        self.iterators_per_epoch = iterators_per_epoch
        self.initial_epoch = initial_epoch
        self.early_stopping = early_stopping
        self.history: list[dict[str, float]] = []
        self.finished = False

    # --- restore ---
    def on_train_begin(self, logs=None):
        self.history, self.finished = [], False
        found = checkpoints(self.directory)
        if not found:
            return
        latest = found[-1]
        state = json.loads((latest / STATE_FILE).read_text(encoding="utf-8"))
        with np.load(latest / ARRAYS_FILE) as arrays:
            _assign(self.model.variables, arrays, "model", latest)
            if self.model.optimizer is not None and state["optimizer_variables"]:
                if not self.model.optimizer.built:
                    self.model.optimizer.build(self.model.trainable_variables)
                _assign(self.model.optimizer.variables, arrays, "optimizer", latest)
            best = [arrays[f"best_{i}"] for i in range(state["best_weights"])] if state["best_weights"] else None
        if self.early_stopping is not None and state.get("early_stopping"):
            self.early_stopping.restore(state["early_stopping"], best)
        self.history = state["history"]
        epochs_done = state["epoch"]
        self.finished = state["finished"]
        # Keras' fit (and kpipe.training.multi_worker.fit) start at the resume epoch when it is set.
        keras_private.set_resume_epoch(self.model, self.params.get("epochs", epochs_done) if self.finished
                                       else epochs_done)
        if self.train_data is not None:
            for _ in range((epochs_done - self.initial_epoch) * self.iterators_per_epoch):
                iter(self.train_data)  # advances the shuffle seed without reading anything
        log.info("Resuming after epoch %d from %s%s", epochs_done, latest,
                 " (training had finished)" if self.finished else "")

    # --- save ---
    def on_epoch_end(self, epoch, logs=None):
        self.history.append({k: float(v) for k, v in (logs or {}).items()})
        finished = bool(self.model.stop_training) or epoch + 1 >= self.params.get("epochs", float("inf"))
        if not self.write:
            return
        arrays = {f"model_{i}": np.asarray(v) for i, v in enumerate(self.model.variables)}
        optimizer_variables = self.model.optimizer.variables if self.model.optimizer is not None else []
        arrays.update({f"optimizer_{i}": np.asarray(v) for i, v in enumerate(optimizer_variables)})
        best = self.early_stopping.best_weights if self.early_stopping is not None else None
        arrays.update({f"best_{i}": w for i, w in enumerate(best or [])})
        state = {"epoch": epoch + 1, "finished": finished, "history": self.history,
                 "optimizer_variables": len(optimizer_variables), "best_weights": len(best or []),
                 "early_stopping": self.early_stopping.state() if self.early_stopping is not None else None}
        self.directory.mkdir(parents=True, exist_ok=True)
        partial = self.directory / f".partial-{uuid.uuid4().hex}"
        try:
            partial.mkdir()
            np.savez(partial / ARRAYS_FILE, **arrays)
            (partial / STATE_FILE).write_text(json.dumps(state), encoding="utf-8")
            fsync_tree(partial)  # a power cut must not leave a renamed checkpoint with empty files
        except BaseException:  # e.g. a full disk: the last good checkpoint stays, and its space is not taken
            shutil.rmtree(partial, ignore_errors=True)
            raise
        target = self.directory / f"epoch-{epoch + 1:04d}"
        shutil.rmtree(target, ignore_errors=True)  # a stale one from a run that died before renaming over it
        os.replace(partial, target)
        fsync_folder(self.directory)  # the new checkpoint's name is on disk before the older one is deleted
        for older in checkpoints(self.directory)[:-1]:
            shutil.rmtree(older, ignore_errors=True)


def _assign(variables, arrays, prefix: str, where: Path) -> None:
    count = sum(1 for key in arrays.files if key.startswith(prefix + "_"))
    if count != len(variables):
        raise ValueError(f"the checkpoint {where} holds {count} {prefix} variables but the model has "
                         f"{len(variables)}; it was written by another model: delete {where.parent} to start over")
    for i, variable in enumerate(variables):
        variable.assign(arrays[f"{prefix}_{i}"])

