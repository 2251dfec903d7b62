"""Files that are either whole or absent: written beside their place under a name of their own, flushed to disk,
then renamed over it (one `rename`, atomic on POSIX), the folder flushed too. A process killed or a power cut
mid-write leaves the previous file (or none), never half of one that every later run trips over."""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Callable


def write_atomically(path: Path, write: Callable[[Path], None]) -> Path:
    """`write(partial)` fills a partial file beside `path`; it is fsynced and renamed to `path`. Two writers at once
    each rename a whole file: the last one wins, neither is mixed with the other."""
    path = Path(path)
    partial = path.parent / f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.partial"
    try:
        write(partial)
        with open(partial, "rb+") as handle:
            os.fsync(handle.fileno())
        os.replace(partial, path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    _fsync_folder(path.parent)
    return path


def write_text_atomically(path: Path, text: str) -> Path:
    return write_atomically(path, lambda partial: partial.write_text(text, encoding="utf-8"))


def _fsync_folder(folder: Path) -> None:
    """The rename itself reaches the disk (POSIX; a no-op where folders cannot be opened)."""
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)
