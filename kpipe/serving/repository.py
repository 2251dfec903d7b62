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

if TYPE_CHECKING:
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


def identity(path: Path) -> tuple:
    """What tells one published version folder from another at the same path: a version deleted and
    published again, a broken one fixed in place, or one still being copied in (`cp -r`, `rsync`: its
    variables grow after its saved_model.pb is final) is a new version to load, or to try again."""
    stamps = []
    variables = sorted((path / "variables").glob("*")) if (path / "variables").is_dir() else []
    for part in (path, path / "saved_model.pb", path / manifest.MANIFEST_FILE, *variables):
        try:
            stat = part.stat()
            stamps.append((stat.st_ino, stat.st_mtime_ns, stat.st_size if part != path else 0))
        except OSError:
            stamps.append(None)
    return (path, *stamps)


@dataclass
class ServedModel:
    """One served name. A folder of versions serves its newest version that loads: a version that fails
    is logged once and skipped (retried when its files change), the served one keeps serving."""
    name: str
    root: Path                 # the folder of versions, or the single version folder
    follows_latest: bool       # a folder of versions: pick up newer versions
    current: LoadedVersion | None = None
    failed: dict = field(default_factory=dict)  # identity -> the error, of versions that did not load
    current_identity: tuple | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _missing_logged: bool = False

    def candidates(self) -> list[Path]:
        """The version folders worth serving, newest first (the single folder, for a version folder)."""
        if not self.follows_latest:
            return [self.root]
        return [self.root / str(v) for v in reversed(versions.versions(self.root))]

    def refresh(self, warm_up_rows: int = 1) -> LoadedVersion | None:
        """Serve the newest version that loads (loaded and warmed up, see Signature.warm_up) if it is not the
        one served; the new one, or None if unchanged. The served version keeps serving until the new one
        is ready, and whatever is wrong on disk (a broken, vanished or emptied version) leaves it serving.

        Raises:
            KpipeError: nothing is served yet and no version loads (the newest one's error).
        """
        with self._lock:
            candidates = self.candidates()
            if not candidates and self.current is not None:
                if not self._missing_logged:
                    log.warning("%s: no versions left in %s; keeping version %d loaded", self.name, self.root,
                                self.current.version)
                    self._missing_logged = True
                return None
            self._missing_logged = False
            # The served version deleted while older ones remain: roll back to the newest of those that loads, as
            # TF Serving does (a bad version is withdrawn by removing its folder).
            withdrawn = self.current is not None and self.follows_latest and not self.current.path.exists()
            first_error = None
            for index, path in enumerate(candidates):
                key = identity(path)
                if self.current is not None and key == self.current_identity:
                    return None  # the served version is still the newest good one
                if (self.current is not None and self.follows_latest and _number(path) < self.current.version
                        and not withdrawn):
                    return None  # only older versions than the served one are left to try
                if key in self.failed:
                    first_error = first_error or self.failed[key]
                    continue
                try:
                    loaded = load_version(path, warm_up_rows)
                except Exception as error:  # any failure: this version is skipped, once, with its reason
                    message = error if isinstance(error, KpipeError) else KpipeError(
                        f"cannot load {path}: {type(error).__name__}: {first_line(str(error))}")
                    self.failed[key] = message
                    first_error = first_error or message
                    if self.current is not None:
                        log.warning("%s: keeping version %d: %s", self.name, self.current.version, message)
                    elif index + 1 < len(candidates):  # at start-up, with an older version to fall back on
                        log.warning("%s: trying an older version: %s", self.name, message)
                    continue
                self.current, self.current_identity = loaded, key
                return loaded
            if self.current is None:
                raise first_error or KpipeError(f"no exported versions in {self.root}")
            return None


def _number(path: Path) -> int:
    return int(path.name) if versions.is_version_name(path.name) else 0


def load_version(path: Path, warm_up_rows: int = 1) -> LoadedVersion:
    """Load one exported version, describe its signatures and warm them up with up to `warm_up_rows` rows.

    Raises:
        KpipeError: it cannot be loaded (one line, with the cause).
    """
    from kpipe.portable import runtime

    if runtime.is_portable(path):  # ONNX or LiteRT: served by its runtime, TensorFlow never imported
        return _load_portable(path, warm_up_rows)
    from kpipe.serving.signatures import saved_model_signature

    try:
        loaded = saved_model.load_saved_model(path)
    except KpipeError:
        raise
    except Exception as error:  # a corrupt or foreign SavedModel: say which and why, in one line
        raise KpipeError(f"cannot load the SavedModel in {path}: {first_line(str(error), type(error).__name__)}") \
            from None
    signatures = {name: saved_model_signature(name, function) for name, function in loaded.signatures.items()}
    # Any SavedModel can be served (kpipe's manifest only adds the pipeline name and task), but a kpipe
    # export whose manifest is unreadable is refused: it was damaged after it was published.
    info = manifest.read(path) if (path / manifest.MANIFEST_FILE).exists() else {}
    alias = info.get("serving_default_alias")  # kpipe.exports.saved_model wrote which endpoint it is
    if alias in signatures and "serving_default" in signatures:
        # one signature under two names, so one set of batching lanes (two let a model take twice its share)
        signatures["serving_default"] = signatures[alias]
    # An export may ask for a smaller warm-up: a language model's signatures generate (a call per token), where
    # warming up 256 rows costs seconds of start-up and compiles nothing one row does not
    _warm_up(path, signatures, min(warm_up_rows, int(info.get("warm_up_rows", warm_up_rows))))
    return LoadedVersion(_number(path) or 1, path, signatures, info, module=loaded)


def _load_portable(path: Path, warm_up_rows: int) -> LoadedVersion:
    from kpipe.portable.runtime import open_portable
    from kpipe.serving.signatures import portable_signatures

    export = open_portable(path)
    signatures = portable_signatures(export)
    _warm_up(path, signatures, warm_up_rows)
    source = str(export.manifest.get("source_version", ""))  # `1-onnx` was written from version 1
    return LoadedVersion(_number(path) or (int(source) if source.isdecimal() else 1), path, signatures,
                         export.manifest, module=export)


def _warm_up(path: Path, signatures: dict, rows: int) -> None:
    for signature in {id(s): s for s in signatures.values()}.values():  # an alias once
        try:
            signature.warm_up(rows)
        except Exception as error:  # e.g. a model that rejects empty strings: it is served cold, not refused
            log.warning("%s: could not warm up signature %s: %s", path, signature.name, first_line(str(error)))


def parse_model_argument(argument: str, export_dir: str | Path) -> ServedModel:
    """`NAME=WHERE` or `WHERE` (a pipeline name, a folder of versions or a version folder) → a ServedModel."""
    # The name is what comes before the first '=' (a name holds none); a path may hold '=' itself.
    name, _, where = argument.partition("=")
    if not _ or Path(argument).exists():
        name, where = "", argument
    where = where.strip()
    from kpipe.portable.runtime import is_portable

    portable = [path for path in (Path(where), Path(export_dir) / where) if is_portable(path)]
    # a version folder (or a portable export, which is one) resolves to itself; raises ModelNotFoundError
    found = portable[:1] or versions.resolve_versions(where, export_dir)
    single = found[0] in (Path(where), Path(export_dir) / where)
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

        A version that fails to load is logged once and skipped: the served one keeps serving.
        """
        for model in self.models.values():
            if not model.follows_latest:
                continue
            try:
                new = model.refresh(self.warm_up_rows)
            except Exception:  # never one model's trouble in the way of the others' refresh
                log.exception("%s: checking for new versions failed; keeping version %d", model.name,
                              model.current.version)
                continue
            if new is not None:
                log.info("%s: now serving version %d (%s)", model.name, new.version, new.path)
