"""`kpipe.json`: what an export is, written into every version folder and read by every loader.

    {"format": 1, "kpipe_version": "0.1.0", "pipeline": "sentiment-bilstm", "task": "classify",
     "family": "rnn_classifier", "config_fingerprint": "…", "data_fingerprint": "…",
     "signatures": {"serve": {"inputs": {"text": {"dtype": "string", "shape": [null]}},
                              "outputs": ["label", "label_id", "probabilities"]}}}

Handed the wrong kind of export, a command names the one that fits (`kpipe forecast` given a
classifier says to use `kpipe predict`). No TensorFlow here: loaders check before they load.
"""

from __future__ import annotations

import hashlib
import json
from importlib import metadata
from pathlib import Path
from typing import Iterable

from kpipe.errors import KpipeError
from kpipe.portable.export_files import MANIFEST_FILE

FORMAT = 1

def answering_command(manifest: dict, folder: Path | str) -> str:
    """The command that answers with the export in `folder` ("" for a task kpipe does not know)."""
    from kpipe.tasks.registry import TASKS  # the parser's table: imported when a mistake is reported

    spec = TASKS.get(manifest.get("task"))
    if spec is None:
        return ""
    portable = "network_files" in manifest
    return ((portable and spec.portable_command) or spec.command).replace("EXPORT", str(folder))


class WrongExportError(KpipeError):
    """The export is of another task (or not a kpipe export) than the command needs."""


def kpipe_version() -> str:
    try:
        return metadata.version("kpipe")
    except metadata.PackageNotFoundError:
        return "unknown"


def fingerprint(parts: Iterable) -> str:
    """A short hash of the data a model was trained on (texts, numbers, pairs), order included."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(repr(part).encode("utf-8") if not isinstance(part, bytes) else part)
        digest.update(b"\x00")
    return digest.hexdigest()[:16]


def update(folder: Path, **fields) -> None:
    """Add `fields` to the manifest in `folder` (created if absent)."""
    path = Path(folder) / MANIFEST_FILE
    manifest = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {"format": FORMAT}
    manifest.update(fields)
    path.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def read(folder: Path) -> dict:
    """The manifest of an export folder.

    Raises:
        WrongExportError: no manifest (not a kpipe export, or one from before manifests).
    """
    path = Path(folder) / MANIFEST_FILE
    if not path.is_file():
        raise WrongExportError(f"{folder} has no {MANIFEST_FILE}: not a kpipe export (or one written by an older "
                               "kpipe); export it again with `kpipe run PIPELINE`")
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise WrongExportError(f"{path} cannot be read ({type(error).__name__}: {error}); export the model "
                               "again with `kpipe run PIPELINE`") from None
    if not isinstance(found, dict):
        raise WrongExportError(f"{path} is not a JSON object; export the model again with `kpipe run PIPELINE`")
    return found


def _a(word) -> str:
    return f"{'an' if str(word)[:1] in 'aeiou' else 'a'} {word}"


def require(folder: Path, task: str | tuple[str, ...], command: str, *, signature: str = "") -> dict:
    """The manifest of `folder`, checked to be an export of `task` (or of one of several tasks), with
    `signature`, if given.

    Raises:
        WrongExportError: one line naming what the export is and the command that fits it.
    """
    manifest = read(folder)
    found = manifest.get("task")
    tasks = (task,) if isinstance(task, str) else tuple(task)
    if found not in tasks:
        use = answering_command(manifest, folder)
        raise WrongExportError(f"{folder} is {_a(found)} export (pipeline {manifest.get('pipeline')}), but "
                               f"`{command}` needs {_a(' or '.join(tasks))} export"
                               + (f"; for this one use: {use}" if use else ""))
    if signature and signature not in manifest.get("signatures", {}):
        raise WrongExportError(f"{folder} ({manifest.get('family')}, pipeline {manifest.get('pipeline')}) has no "
                               f"`{signature}` signature, which `{command}` needs")
    return manifest
