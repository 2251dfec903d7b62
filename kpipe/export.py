"""Versioned, atomic exports: saved_models/<pipeline>/<version>/, never overwritten.

The version folder is the SavedModel itself (TF Serving's layout: numeric version folders), with
kpipe's files beside it (config.toml, metrics.json, labels, plots). It is written to a hidden
temporary folder first and renamed into place, so a crash never leaves a half-written version.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import uuid
from pathlib import Path
from typing import Callable

from kpipe import dependencies, manifest
from kpipe.errors import ModelNotFoundError

log = logging.getLogger(__name__)


def versions(root: Path) -> list[int]:
    """The version numbers already exported under `root`, ascending."""
    if not root.is_dir():
        return []
    return sorted(int(p.name) for p in root.iterdir() if p.is_dir() and p.name.isdigit())


def write_version(root: Path, write: Callable[[Path], None], *, chief: bool = True) -> Path:
    """Run `write(tmp_dir)`, then move `tmp_dir` to `root/<next version>` in one rename.

    A rename onto an existing version fails instead of replacing it, so two concurrent runs
    get different versions and nothing is ever overwritten. In a multi-worker run only the chief
    (`chief=True`) publishes; another worker writes into a temporary folder that is deleted,
    as tf.distribute recommends (saving may need every worker to take part).

    Returns:
        The new version folder (for a worker that is not the chief, `root`, where the chief's goes).
    """
    if not chief:
        scratch = Path(tempfile.mkdtemp(prefix="kpipe-worker-export-"))
        try:
            write(scratch)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        log.info("Not the chief: the export is written by the chief under %s", root)
        return root
    root.mkdir(parents=True, exist_ok=True)
    tmp = root / f".tmp-{uuid.uuid4().hex}"
    tmp.mkdir()
    try:
        write(tmp)
        while True:
            target = root / str((versions(root) or [0])[-1] + 1)
            try:
                os.rename(tmp, target)  # fails if target exists (even empty-dir races end in an error)
                break
            except OSError:
                if not target.exists():
                    raise
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    log.info("Exported %s", target)
    return target


def resolve_versions(model: str | Path, export_dir: str | Path = "saved_models") -> list[Path]:
    """The exported versions `model` names: a version folder (holding saved_model.pb) itself, or every
    version (oldest first) of a folder of versions or of a pipeline name under `export_dir`.

    Raises:
        ModelNotFoundError: nothing exported there, with the fix.
    """
    for candidate in (Path(model), Path(export_dir) / str(model)):
        if (candidate / "saved_model.pb").is_file():
            return [candidate]
        found = versions(candidate)
        if found:
            return [candidate / str(v) for v in found]
    raise ModelNotFoundError(
        f"no exported model at '{model}' (nor under {Path(export_dir) / str(model)}); pass the folder of an "
        f"export such as saved_models/sentiment-bilstm/1, or train one first with `kpipe run PIPELINE`")


def resolve_model_dir(model: str | Path, export_dir: str | Path = "saved_models") -> Path:
    """Find an exported version from a path or a pipeline name: a version folder, a folder of versions
    (the latest is taken), or a pipeline name (its latest version under `export_dir`).

    Raises:
        ModelNotFoundError: nothing exported there, with the fix.
    """
    return resolve_versions(model, export_dir)[-1]


def write_saved_model(path: Path, *, tracked: list, endpoints: dict) -> None:
    """Write a SavedModel at `path` holding `tracked` objects (models, layers, tf.Modules) and the
    given endpoints (name → tf.function with an input signature): what plain TF serving loads."""
    import keras

    archive = keras.export.ExportArchive()
    for item in tracked:
        archive.track(item)
    for name, function in endpoints.items():
        archive.add_endpoint(name, function)
    archive.write_out(str(path), verbose=False)
    manifest.update(path, signatures={name: describe_signature(function) for name, function in endpoints.items()})


def describe_signature(function) -> dict:
    """Input names, dtypes and shapes, and output names, of a tf.function with an input signature."""
    inputs = {spec.name: {"dtype": spec.dtype.name, "shape": spec.shape.as_list()}
              for spec in function.input_signature}
    outputs = function.get_concrete_function().structured_outputs
    return {"inputs": inputs, "outputs": sorted(outputs) if isinstance(outputs, dict) else []}


def load_saved_model(path: Path):
    """`tf.saved_model.load`, with TensorFlow Text's ops registered first when it is installed:
    WordPiece tokenizers inside an export use them, and plain TensorFlow does not know them.

    Raises:
        MissingDependencyError: the export needs tensorflow-text and it is not installed.
    """
    import tensorflow as tf

    if dependencies.installed("tensorflow_text"):
        import tensorflow_text  # noqa: F401  (registers the ops)
        return tf.saved_model.load(str(path))
    try:
        return tf.saved_model.load(str(path))
    except (tf.errors.NotFoundError, RuntimeError) as error:  # "Op type not registered 'RegexSplitWithOffsets'"
        if "Op type not registered" not in str(error):
            raise
        dependencies.require_tensorflow_text(f"the export {path}")
        raise


# Modules whose custom layers a saved model.keras may name (each registers them when imported).
CUSTOM_LAYER_MODULES = ("kpipe.models.bag_of_ngrams", "kpipe.models.char_generator", "kpipe.models.rnn_forecaster",
                        "kpipe.models.seq2seq", "kpipe.models.transformer_classifier", "kpipe.models.word2vec",
                        "keras_hub")


def load_keras_model(model: str | Path, export_dir: str | Path = "saved_models"):
    """The Keras model (`model.keras`) of an export, for fine-tuning or inspecting from Python.

    `model` is what `resolve_model_dir` accepts (a version folder, a folder of versions or a
    pipeline name). kpipe's custom layers (and keras-hub's) are registered first, so
    `keras.saving.load_model` finds them. Loaded without its optimizer (`compile=False`).

    Example:
        >>> model = load_keras_model("sentiment-transformer")  # doctest: +SKIP
    """
    import importlib

    import keras

    path = resolve_model_dir(model, export_dir)
    if not (path / "model.keras").is_file():
        raise ModelNotFoundError(f"{path} has no model.keras: not a kpipe export (or one written before kpipe "
                                 "kept the Keras model)")
    for module in CUSTOM_LAYER_MODULES:
        importlib.import_module(module)
    return keras.saving.load_model(path / "model.keras", compile=False)


def finish_run(work_dir: Path, *, chief: bool = True) -> None:
    """Delete a finished run's resume state (the chief's alone: other workers only read it)."""
    if chief:
        shutil.rmtree(work_dir, ignore_errors=True)


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
    write_history_csv(history, export_dir / "history.csv")
    if (work_dir / "tensorboard").is_dir():
        shutil.copytree(work_dir / "tensorboard", export_dir / "tensorboard")


def write_run_files(path: Path, *, model, config, metrics: dict, history: list[dict], work_dir: Path) -> None:
    """What every export holds beside its SavedModel: model.keras, config.toml, metrics.json, the
    training curves and the run's logs (history.csv, tensorboard/)."""
    from kpipe import reporting

    model.save(path / "model.keras")
    (path / "config.toml").write_text(config.to_toml(), encoding="utf-8")
    reporting.write_json(metrics, path / "metrics.json")
    if history:
        reporting.plot_training_curves(history, path / "training_curves.png", title=config.name)
    copy_run_logs(work_dir, path, history)
