"""Files that are either whole or absent: written beside their place under a name of their own, flushed to disk,
then renamed over it (one `rename`, atomic on POSIX), the folder flushed too. A process killed or a power cut
mid-write leaves the previous file (or none), never half of one that every later run trips over."""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import time
from pathlib import Path
from typing import Callable

from kpipe.errors import KpipeError


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
    fsync_folder(path.parent)
    return path


def write_text_atomically(path: Path, text: str) -> Path:
    return write_atomically(path, lambda partial: partial.write_text(text, encoding="utf-8"))


def publish_folder(tmp: Path, target: Path) -> Path:
    """Rename the finished folder `tmp` to `target`, which must not exist (nothing is ever replaced), and flush
    the rename. When another writer published `target` first (two `kpipe export`s of one version at once), one line
    says so (KpipeError), and `tmp` is the caller's to remove."""
    try:
        tmp.rename(target)
    except OSError:
        if not target.exists():
            raise
        raise KpipeError(f"{target} was written meanwhile by another process; nothing was replaced") from None
    fsync_folder(target.parent)
    return target


def fsync_folder(folder: Path) -> None:
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


def fsync_file(path: Path) -> None:
    """Flush the file's contents to the disk (before a rename publishes it)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_tree(folder: Path) -> None:
    """Flush every file and folder under `folder` to the disk, so that a power cut after the rename that
    publishes it cannot leave a published version with empty or missing files."""
    folders = [folder]
    for path in folder.rglob("*"):
        if path.is_symlink():
            continue
        if path.is_dir():
            folders.append(path)
        elif path.is_file():
            fsync_file(path)
    for path in folders:
        fsync_folder(path)


# === Partial files and folders of writers that were killed ===
# A partial names its writer (`HOST~PIDNS-PID`), so a later run can tell one whose writer is gone from one being
# written now. A PID means that process only within its PID namespace: two containers sharing a volume (and, with
# --network host, the hostname) each number their processes from 1, so the namespace is part of the name.

def writer_host() -> str:
    """This machine and PID namespace: the hostname, and the namespace's inode where /proc tells it."""
    try:
        namespace = os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        namespace = 0
    return f"{socket.gethostname()}~{namespace}"


def writer_tag() -> str:
    """`HOST~PIDNS-PID` of this process, for the names of its partial files."""
    return f"{writer_host()}-{os.getpid()}"


def alive(pid: int) -> bool:
    """Whether process `pid` runs (in this PID namespace)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def abandoned(path: Path, tag: str, max_age_s: float = 7 * 24 * 3600) -> bool:
    """Whether the partial `path`, written by `tag` (`writer_tag()`'s form), was left by a killed writer: one of
    this machine and PID namespace whose process no longer runs, or any untouched for `max_age_s`."""
    writer, _, pid = tag.rpartition("-")
    try:
        return ((writer == writer_host() and pid.isdecimal() and pid.isascii() and not alive(int(pid)))
                or time.time() - path.stat().st_mtime > max_age_s)
    except OSError:
        return False


def remove_abandoned(folder: Path, pattern: str, tag_of: Callable[[str], str]) -> list[Path]:
    """Remove the partials in `folder` matching `pattern` (a glob) whose writer (`tag_of(name)`) was killed."""
    removed = []
    for path in sorted(folder.glob(pattern)) if folder.is_dir() else []:
        if abandoned(path, tag_of(path.name)):
            shutil.rmtree(path, ignore_errors=True) if path.is_dir() else path.unlink(missing_ok=True)
            removed.append(path)
    return removed
