"""What every export holds beside its SavedModel (model.keras, config.toml, metrics.json, curves, logs),
and the cleanup of a finished run's resume state."""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path
from kpipe.portable.export_files import CONFIG_FILE, CURVES_FILE, HISTORY_FILE, KERAS_MODEL_FILE, METRICS_FILE


TRASH_PREFIX = ".trash-"


def finish_run(work_dir: Path, *, chief: bool = True) -> None:
    """Delete a finished run's resume state (the chief's alone: other workers only read it).

    The folder is first renamed out of the way in one step, then deleted: a kill during the deletion
    leaves a `.trash-*` folder that the next run removes, never a half-deleted work folder that a
    rerun would try to resume from.
    """
    if not chief or not work_dir.exists():
        return
    trash = work_dir.with_name(f"{TRASH_PREFIX}{work_dir.name}-{uuid.uuid4().hex[:8]}")
    try:
        os.rename(work_dir, trash)
    except OSError:
        trash = work_dir
    shutil.rmtree(trash, ignore_errors=True)


def trash_of(work_dir: Path) -> list[Path]:
    """What killed cleanups of `work_dir`'s config left (see finish_run)."""
    parent = work_dir.parent
    return sorted(parent.glob(f"{TRASH_PREFIX}{work_dir.name}-*")) if parent.is_dir() else []


def remove_trash(work_dir: Path) -> None:
    for entry in trash_of(work_dir):
        shutil.rmtree(entry, ignore_errors=True)


def write_history_csv(history: list[dict], path: Path) -> None:
    """The per-epoch logs as CSV (an `epoch` column, then every metric), as Keras' CSVLogger writes them."""
    import csv

    keys = sorted({key for row in history for key in row})
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["epoch", *keys])
        for epoch, row in enumerate(history):
            writer.writerow([epoch, *(row.get(key, "") for key in keys)])


def copy_run_logs(work_dir: Path, export_dir: Path, history: list[dict]) -> None:
    """Write a run's per-epoch history and copy its TensorBoard logs from its work folder into its export."""
    write_history_csv(history, export_dir / HISTORY_FILE)
    source = work_dir / "tensorboard"
    try:
        shutil.copytree(source, export_dir / "tensorboard")
    except (FileNotFoundError, shutil.Error):
        # Logs that vanish while they are copied were deleted by a multi-worker run's chief, which removes the
        # shared work folder once it has published; only another worker, whose export is a throwaway copy,
        # can be copying then. Any other failure (a full disk) is the caller's to report.
        if source.exists():
            raise


def write_run_files(path: Path, *, model, config, metrics: dict, history: list[dict], work_dir: Path) -> None:
    """What every export holds beside its SavedModel: model.keras, config.toml, metrics.json, the
    training curves and the run's logs (history.csv, tensorboard/)."""
    from kpipe.evaluation import reporting

    model.save(path / KERAS_MODEL_FILE)
    (path / CONFIG_FILE).write_text(config.to_toml(), encoding="utf-8")
    reporting.write_json(metrics, path / METRICS_FILE)
    if history:
        reporting.plot_training_curves(history, path / CURVES_FILE, title=config.name)
    copy_run_logs(work_dir, path, history)
