"""What ties a run's work folder to its data and to the version it publishes, so that a rerun after a
kill neither resumes a checkpoint on data that changed since, nor publishes a finished run twice.

`<work folder>/run.json` is written when training starts: a random run id and a stamp of the data
file or folder (`data.path`; embedded data comes from an installed package and has none). The run
id goes into the published version's `kpipe.json`. A rerun that finds the work folder compares the
stamp (a changed file: one line naming it, nothing touched) and looks for the run id among the
published versions (found: the run had been published and killed while it cleaned up).
"""

from __future__ import annotations

import hashlib
import json
import uuid
from pathlib import Path

from kpipe.atomic import write_text_atomically
from kpipe.errors import KpipeError

RUN_FILE = "run.json"


class DataChangedError(KpipeError):
    """The data changed between a killed run and its rerun: resuming would mix two datasets."""


class AlreadyPublishedError(KpipeError):
    """The killed run had already published its version; only its cleanup was left to do."""

    def __init__(self, version_dir: Path):
        self.version_dir = version_dir
        super().__init__(f"the interrupted run of this config had already been exported to {version_dir}")


HASHED_FILE_BYTES = 1 << 30  # larger files are stamped by size and modification time (hashing takes minutes)


def data_stamp(path: str) -> dict | None:
    """A fingerprint of the data at `path`: a file's size and content hash (size and modification time above
    HASHED_FILE_BYTES); a folder's (or a glob's) files' paths, sizes and modification times."""
    if not path:
        return None
    where = Path(path).expanduser()
    digest = hashlib.sha256()
    if where.is_file() and where.stat().st_size > HASHED_FILE_BYTES:
        stat = where.stat()
        return {"path": str(where.resolve()), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
    if where.is_file():
        with where.open("rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
        return {"path": str(where.resolve()), "size": where.stat().st_size, "sha256": digest.hexdigest()[:16]}
    from kpipe.datasets.shards import GLOB_CHARACTERS

    if where.is_dir() or any(c in path for c in GLOB_CHARACTERS):  # a folder, or a glob of shards
        import glob

        files = (sorted(p for p in where.rglob("*") if p.is_file()) if where.is_dir()
                 else sorted(Path(p) for p in glob.glob(str(where), recursive=True) if Path(p).is_file()))
        for p in files:
            stat = p.stat()
            digest.update(f"{p.relative_to(where) if where.is_dir() else p}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
        return {"path": str(where.resolve()) if where.is_dir() else path, "files": len(files),
                "listing_sha256": digest.hexdigest()[:16]}
    return None


def read_run_file(work_dir: Path) -> dict | None:
    try:
        return json.loads((work_dir / RUN_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def start(work_dir: Path, data_path: str) -> str:
    """The run id of the training in `work_dir`: the one already written there, or a new one written now
    with the data's stamp."""
    found = read_run_file(work_dir)
    if found and found.get("run_id"):
        return found["run_id"]
    work_dir.mkdir(parents=True, exist_ok=True)
    run_id = uuid.uuid4().hex
    write_text_atomically(work_dir / RUN_FILE, json.dumps({"run_id": run_id, "data": data_stamp(data_path)}))
    return run_id


def check_rerun(work_dir: Path, data_path: str, export_root: Path, leftovers: list[Path] = ()) -> None:
    """Before a run resumes from `work_dir`: the data must be what it was, and the run not yet published.

    Args:
        leftovers: work folders of this config that a killed cleanup left (run_files.trash_of): their run
            had published its version.

    Raises:
        DataChangedError: the data file or folder differs from the one the interrupted run trained on.
        AlreadyPublishedError: a version published by the interrupted run exists (its cleanup was killed).
    """
    found = read_run_file(work_dir)
    run_ids = {info["run_id"] for info in [found, *map(read_run_file, leftovers)] if info and info.get("run_id")}
    if not run_ids:
        return
    from kpipe.exports import manifest, versions

    for version in reversed(versions.versions(export_root)):
        try:
            if manifest.read(export_root / str(version)).get("run_id") in run_ids:
                raise AlreadyPublishedError(export_root / str(version))
        except manifest.WrongExportError:
            continue
    if not found:
        return
    before, now = found.get("data"), data_stamp(data_path)
    if before != now:
        what = (before or {}).get("path") or (now or {}).get("path") or data_path or "the data source"
        raise DataChangedError(
            f"the data ({what}) changed since the interrupted run of this config in {work_dir}; resuming would "
            f"train one model on two datasets: restore the data to resume, or delete {work_dir} to start over")
