"""Versioned, atomic exports: saved_models/<pipeline>/<version>/, never overwritten.

The version folder is the SavedModel itself (TF Serving's layout: numeric version folders), with
kpipe's files beside it (config.toml, metrics.json, labels, plots). It is written to a hidden
temporary folder first and renamed into place, so a crash never leaves a half-written version.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import tempfile
import time
import uuid
from pathlib import Path
from typing import Callable

from kpipe.atomic import alive, fsync_folder, fsync_tree, writer_host
from kpipe.errors import ModelNotFoundError

log = logging.getLogger(__name__)


def is_version_name(name: str) -> bool:
    """A version folder's name: ASCII digits only ('²'.isdigit() is true, and int('²') fails)."""
    return re.fullmatch(r"[0-9]+", name) is not None


def versions(root: Path) -> list[int]:
    """The version numbers already exported under `root`, ascending."""
    if not root.is_dir():
        return []
    return sorted(int(p.name) for p in root.iterdir() if p.is_dir() and is_version_name(p.name))


def _taken(root: Path) -> int:
    """The highest number any entry of `root` is named by, folder or not: a stray file named `3` takes 3 too."""
    return max((int(p.name) for p in root.iterdir() if is_version_name(p.name)), default=0)


# A temporary export folder names its writer: `.tmp-HOST~PIDNS-PID-RANDOM`, so a later run can tell one whose
# writer was killed (its process is gone) from one being written now, and remove it. A PID means that process only
# within its PID namespace: two containers sharing an export volume (and, with --network host, the hostname) each
# number their processes from 1, so the namespace is part of the writer's name.
TMP_PREFIX = ".tmp-"


def tmp_name() -> str:
    return f"{TMP_PREFIX}{writer_host()}-{os.getpid()}-{uuid.uuid4().hex[:12]}"


def remove_stale_tmp(root: Path, max_age_s: float = 7 * 24 * 3600) -> list[Path]:
    """Remove temporary export folders left by killed writers: those written on this machine, in this PID namespace,
    by a process that no longer runs, and any (another machine's or container's, or an older kpipe's) untouched for
    `max_age_s`."""
    removed = []
    if not root.is_dir():
        return removed
    host = writer_host()  # a PID is checked only in its own namespace: elsewhere only age removes a folder
    for entry in root.iterdir():
        if not entry.name.startswith(TMP_PREFIX) or not entry.is_dir():
            continue
        writer, _, rest = entry.name[len(TMP_PREFIX):].rpartition("-")[0].rpartition("-")
        pid = int(rest) if rest.isdecimal() and rest.isascii() else None
        try:
            stale = ((writer == host and pid is not None and not alive(pid))
                     or time.time() - entry.stat().st_mtime > max_age_s)
        except OSError:
            continue
        if stale:
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry)
            log.info("Removed %s, left by an export that was killed", entry)
    return removed


def write_version(root: Path, write: Callable[[Path], None], *, chief: bool = True) -> Path:
    """Run `write(tmp_dir)`, flush it to disk, then move `tmp_dir` to `root/<next version>` in one rename.

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
    remove_stale_tmp(root)
    tmp = root / tmp_name()
    tmp.mkdir()
    try:
        write(tmp)
        fsync_tree(tmp)
        for _ in range(1000):  # each failed try means another entry took the number: never more than a few
            target = root / str(_taken(root) + 1)
            try:
                os.rename(tmp, target)  # fails if target exists (even empty-dir races end in an error)
                break
            except OSError:
                if not target.exists():
                    raise
        else:
            raise OSError(f"could not find a free version number under {root}")
        fsync_folder(root)
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
