"""A binary copy of each parsed word-vector text file, so the next load maps it instead of parsing.

Parsing 400,000 GloVe lines takes about a second however it is done (pyarrow's two-thread parser is
the fastest we measured); the same file is loaded again by every run that uses it. After the first
parse, the words and the float32 matrix are written to the cache folder (`KPIPE_CACHE_DIR`, else
`$XDG_CACHE_HOME/kpipe`, else `~/.cache/kpipe`), keyed by the file's absolute path, size and
modification time, so an edited or replaced file is parsed again. The matrix is memory-mapped
(read-only) on later loads: only the rows a run touches are read from disk.

Writing is best effort (a read-only home only costs the parse next time) and atomic (a folder
renamed into place), so concurrent runs never read half a cache entry.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
from pathlib import Path

import numpy as np

from kpipe.cache import cache_root

log = logging.getLogger(__name__)

FORMAT = 1  # bump when the files below change
WORDS_FILE, MATRIX_FILE = "words.txt", "matrix.npy"


def entry_for(path: str | Path) -> Path:
    """The cache folder of a text file as it is now (another size or mtime is another entry)."""
    resolved = Path(path).resolve()
    status = resolved.stat()
    key = hashlib.sha256(f"{FORMAT}|{resolved}|{status.st_size}|{status.st_mtime_ns}".encode()).hexdigest()[:24]
    return cache_root() / "word_vectors" / key


def read(path: str | Path) -> tuple[list[str], np.ndarray] | None:
    """(words, read-only memory-mapped matrix) of a cached file, or None if it is not cached."""
    try:
        entry = entry_for(path)
        if not (entry / MATRIX_FILE).is_file():
            return None
        words = (entry / WORDS_FILE).read_text(encoding="utf-8").split("\n")
        matrix = np.load(entry / MATRIX_FILE, mmap_mode="r")
    except (OSError, ValueError) as error:
        log.debug("word-vector cache unreadable for %s: %s", path, error)
        return None
    if len(words) != len(matrix):
        return None
    log.info("Mapped the cached copy of %s (%s)", path, entry)
    return words, matrix


def write(path: str | Path, words: list[str], matrix: np.ndarray) -> None:
    """Keep a copy of parsed vectors for the next load of `path` (best effort). The files are flushed before the
    folder is renamed into place (a power cut leaves a whole entry or none, never one that fails every later
    load), and partial folders of writers that were killed are removed first (each partial names its writer)."""
    if any("\n" in word for word in words):
        return  # the words file is one word per line
    from kpipe.atomic import fsync_folder, fsync_tree, remove_abandoned, writer_tag

    partial = None
    try:
        entry = entry_for(path)
        remove_abandoned(entry.parent, "*.partial-*", lambda name: name.rpartition(".partial-")[2])
        partial = entry.with_name(f"{entry.name}.partial-{writer_tag()}")
        partial.mkdir(parents=True, exist_ok=True)
        (partial / WORDS_FILE).write_text("\n".join(words), encoding="utf-8")
        np.save(partial / MATRIX_FILE, np.ascontiguousarray(matrix, dtype=np.float32))
        fsync_tree(partial)
        try:
            os.replace(partial, entry)
        except OSError:  # another run cached it first
            shutil.rmtree(partial, ignore_errors=True)
        fsync_folder(entry.parent)
    except OSError as error:
        if partial is not None:
            shutil.rmtree(partial, ignore_errors=True)  # e.g. a full disk: no half-written copy left behind
        log.debug("word-vector cache not written for %s: %s", path, error)
