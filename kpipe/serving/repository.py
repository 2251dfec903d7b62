"""The served models: names, the export each serves, and newer versions picked up while serving.

Each `kpipe serve` argument names one model: a pipeline name (its versions under the export
folder), a folder of versions, or one version folder, optionally as `NAME=WHERE`. A folder of
versions serves its latest version and switches to a newer one when `kpipe run` publishes it (a
version folder appears in one rename, complete, so it is never read half-written); a version
folder serves that version only. Requests name models, never paths: a name that is not in the
repository is a 404, so no request reaches a file outside the served exports.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from kpipe.exports import manifest, saved_model, versions
from kpipe.errors import KpipeError

if TYPE_CHECKING:  # signatures import TensorFlow: loaded with the first model, not to parse the names
    from kpipe.serving.signatures import Signature

log = logging.getLogger(__name__)


def first_line(text: str, default: str = "") -> str:
    """The first non-blank line of an error message (TensorFlow's run to pages)."""
    return (text.strip().splitlines() or [default])[0]


@dataclass
class LoadedVersion:
    version: int
    path: Path
    signatures: dict[str, Signature]
    manifest: dict
    module: object = field(repr=False, default=None)  # the loaded SavedModel, kept alive with its variables


@dataclass
class ServedModel:
    name: str
    root: Path                 # the folder of versions, or the single version folder
    follows_latest: bool       # a folder of versions: pick up newer versions
    current: LoadedVersion | None = None
    failed: Path | None = None  # a newer version that did not load: not retried until another appears
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def latest_on_disk(self) -> Path:
        return self.root if not self.follows_latest else self.root / str(versions.versions(self.root)[-1])

    def refresh(self, warm_up_rows: int = 1) -> LoadedVersion | None:
        """Load (and warm up, see Signature.warm_up) the latest version if it is newer than the one served;
        the new one, or None if unchanged. The served version keeps serving until the new one is ready."""
        with self._lock:
            path = self.latest_on_disk()
            if self.current is not None and path in (self.current.path, self.failed):
                return None
            try:
                self.current = load_version(path, warm_up_rows)
            except KpipeError:
                self.failed = path
                raise
            return self.current


def load_version(path: Path, warm_up_rows: int = 1) -> LoadedVersion:
    """Load one exported version, describe its signatures and warm them up with up to `warm_up_rows` rows.

    Raises:
        KpipeError: it cannot be loaded (one line, with the cause).
    """
    from kpipe.serving.signatures import Signature

    try:
        loaded = saved_model.load_saved_model(path)
    except KpipeError:
        raise
    except Exception as error:  # a corrupt or foreign SavedModel: say which and why, in one line
        raise KpipeError(f"cannot load the SavedModel in {path}: {first_line(str(error), type(error).__name__)}") \
            from None
    signatures = {name: Signature.of(name, function) for name, function in loaded.signatures.items()}
    for signature in signatures.values():
        try:
            signature.warm_up(warm_up_rows)
        except Exception as error:  # e.g. a model that rejects empty strings: it is served cold, not refused
            log.warning("%s: could not warm up signature %s: %s", path, signature.name, first_line(str(error)))
    try:
        info = manifest.read(path)
    except manifest.WrongExportError:
        info = {}  # any SavedModel can be served; kpipe's manifest only adds the pipeline name and task
    version = int(path.name) if path.name.isdigit() else 1
    return LoadedVersion(version, path, signatures, info, module=loaded)


def parse_model_argument(argument: str, export_dir: str | Path) -> ServedModel:
    """`NAME=WHERE` or `WHERE` (a pipeline name, a folder of versions or a version folder) → a ServedModel."""
    name, _, where = argument.rpartition("=")
    where = where.strip()
    found = versions.resolve_versions(where, export_dir)  # raises ModelNotFoundError with the fix
    single = found[0] in (Path(where), Path(export_dir) / where)  # a version folder resolves to itself
    root = found[0] if single else found[0].parent
    if not name:
        name = root.parent.name if single else root.name
    if not name or "/" in name or ":" in name:
        raise KpipeError(f"cannot serve '{argument}' under the name '{name}': name it with NAME=WHERE "
                         "(letters, digits, '-', '_', '.')")
    return ServedModel(name=name, root=root, follows_latest=not single)


class ModelRepository:
    """The served models by name, each loaded at start-up."""

    def __init__(self, models: list[ServedModel], warm_up_rows: int = 1):
        names = [model.name for model in models]
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise KpipeError(f"two models would be served as '{duplicates[0]}': give one another name with "
                             f"NAME=WHERE, e.g. {duplicates[0]}-2=saved_models/{duplicates[0]}/1")
        self.models = {model.name: model for model in models}
        self.warm_up_rows = warm_up_rows
        for model in models:
            model.refresh(warm_up_rows)

    def get(self, name: str) -> ServedModel | None:
        return self.models.get(name)

    def poll(self) -> None:
        """Load newer versions where they were published (each switch logged).

        A version that fails to load is logged and skipped: the served one keeps serving.
        """
        for model in self.models.values():
            if not model.follows_latest:
                continue
            try:
                new = model.refresh(self.warm_up_rows)
            except KpipeError as error:
                log.warning("%s: keeping version %d: %s", model.name, model.current.version, error)
                continue
            if new is not None:
                log.info("%s: now serving version %d (%s)", model.name, new.version, new.path)
