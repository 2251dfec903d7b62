"""`kpipe tune --export-best`: the best trial's export published as the pipeline's next version, once per study and
best trial."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import filelock

from kpipe.atomic import write_text_atomically

log = logging.getLogger(__name__)

PUBLISHED = "published.json"  # in the study folder: {study name: {"trial": n, "version": path}}


def publish_best(folder: Path, study: str, trial: int, export: Path, root: Path) -> Path:
    """`--export-best`: publish trial `trial` of `study` (its export `export`) as the pipeline's next version under
    `root`, once. Several tuners of one study ending together, or a rerun of a finished study, find the version
    already published for that trial and return it (each published one before: two versions of one model); a
    better trial later is published as the next version."""
    from kpipe.exports.versions import write_version

    record = folder / PUBLISHED
    with filelock.FileLock(str(folder / "publish.lock")):
        published = json.loads(record.read_text()) if record.is_file() else {}
        done = published.get(study)
        if done and done["trial"] == trial and (Path(done["version"]) / "saved_model.pb").is_file():
            log.info("Trial %d is published already, as %s", trial, done["version"])
            return Path(done["version"])
        version = write_version(root, lambda tmp: shutil.copytree(export, tmp, dirs_exist_ok=True))
        published[study] = {"trial": trial, "version": str(version)}
        write_text_atomically(record, json.dumps(published, indent=1) + "\n")
    return version
