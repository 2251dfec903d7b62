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
