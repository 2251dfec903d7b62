"""The one way to open an export: resolve a name or folder, check its manifest, load it.

    export = open_export("sentiment-bilstm", task="classify", command="kpipe predict")
    outputs = call_in_batches(lambda batch: export.loaded.serve(tf.constant(batch)), texts, batch_size=256)

Every task's loader and every command goes through `open_export`, so a wrong folder, the export of
another task or a missing signature gets the same one-line error everywhere.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from kpipe.portable.export_files import KERAS_MODEL_FILE
from kpipe.exports import keras_private
from kpipe.errors import ModelNotFoundError
from kpipe.exports import manifest
from kpipe.exports.versions import resolve_model_dir


@dataclasses.dataclass(frozen=True)
class OpenedExport:
    """An export folder, its manifest, and what was loaded from it (a SavedModel or a Keras model)."""

    path: Path
    manifest: dict
    loaded: Any


def open_export(model: str | Path, *, task: str | tuple[str, ...], command: str,
                export_dir: str | Path = "saved_models", signature: str = "",
                load: str = "saved_model") -> OpenedExport:
    """Open the export `model` names (a version folder, a folder of versions: the latest, or a pipeline
    name under `export_dir`) for `command`, which needs a `task` export (with `signature`, if given).

    Args:
        load: "saved_model" (with TensorFlow Text's ops registered first when installed), "keras"
            (`model.keras`, kpipe's custom layers registered first, without its optimizer) or "nothing"
            (only resolve and check, e.g. before TensorFlow loads).

    Raises:
        ModelNotFoundError: nothing exported there, or no model.keras in it.
        WrongExportError: the export is of another task, or lacks `signature`; names the command that fits.
    """
    if load not in LOADERS:
        raise ValueError(f"`load` must be one of {', '.join(LOADERS)}. Received: load={load!r}")
    path = resolve_model_dir(model, export_dir)
    found = manifest.require(path, task, command, signature=signature)
    return OpenedExport(path, found, LOADERS[load](path))


def _load_saved_model(path: Path):
    from kpipe.exports.saved_model import load_saved_model

    return load_saved_model(path)


def load_keras_model_file(path: Path, name: str = KERAS_MODEL_FILE):
    """`path/name` (an export's model.keras, or an ensemble member's), with kpipe's (and keras-hub's) custom
    classes registered, without its optimizer."""
    import keras

    from kpipe.exports.custom_layers import register_custom_layers

    if not (path / name).is_file():
        raise ModelNotFoundError(f"{path} has no {name}: not a kpipe export (or one written before kpipe "
                                 "kept the Keras model)")
    register_custom_layers()
    with keras_private.no_sharing_of_copies():
        return keras.saving.load_model(path / name, compile=False)



LOADERS: dict[str, Callable[[Path], Any]] = {"saved_model": _load_saved_model, "keras": load_keras_model_file,
                                             "nothing": lambda path: None}


def load_keras_model(model: str | Path, export_dir: str | Path = "saved_models"):
    """The Keras model (`model.keras`) of an export, for fine-tuning or inspecting from Python.

    `model` is a version folder, a folder of versions (the latest is taken) or a pipeline name.

    Example:
        >>> model = load_keras_model("sentiment-transformer")  # doctest: +SKIP
    """
    return load_keras_model_file(resolve_model_dir(model, export_dir))


def call_in_batches(function: Callable[[Sequence], Any], items: Sequence, *, batch_size: int = 256,
                    on_batch: Callable[[int], object] | None = None) -> list:
    """`function` on consecutive slices of `items` (at most `batch_size` each), in order; `on_batch(n)` after
    each slice of n items (e.g. a progress bar's `update`).

    Returns:
        The list of what each call returned.
    """
    if batch_size < 1:
        raise ValueError(f"`batch_size` must be at least 1. Received: batch_size={batch_size}")
    results = []
    for start in range(0, len(items), batch_size):
        batch = items[start:start + batch_size]
        results.append(function(batch))
        if on_batch:
            on_batch(len(batch))
    return results


def concatenate(parts: list[np.ndarray], width: int = 0) -> np.ndarray:
    """Row-wise concatenation of `call_in_batches` results; (0, width) when there were none."""
    return np.concatenate(parts) if parts else np.zeros((0, width), np.float32)
