"""The lock that keeps two processes out of one run's work folder, without TensorFlow, so that `kpipe run`
can tell a second run of a live config to stop before TensorFlow loads (about 8 s sooner).

The lock is the operating system's (`filelock`), so a run killed with SIGKILL releases it. It and its owner
note live in `<export.dir>/<pipeline>/.locks/`, outside the work folder, which a finished run deletes (a lock
file deleted while another process waits on it would let a third one in).
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from pathlib import Path

import filelock

from kpipe.errors import KpipeError
from kpipe.redact import mask_passwords


class RunInProgressError(KpipeError):
    """Another process is running the same config in the same export folder."""


class RunLock:
    """The lock of one config's runs in one export folder (`export_root` = `<export.dir>/<pipeline>`)."""

    def __init__(self, export_root: Path, fingerprint: str):
        self.export_root = export_root
        self.path = export_root / ".locks" / f"{fingerprint}.lock"
        self.owner_path = export_root / ".locks" / f"{fingerprint}.owner.json"
        self.work_dir = export_root / ".work" / fingerprint
        self._lock: filelock.BaseFileLock | None = None

    @classmethod
    def of(cls, config) -> "RunLock":
        return cls(Path(config.export.dir) / config.name, config.fingerprint())

    def acquire(self) -> None:
        """Take the lock and write the owner note; `RunInProgressError` if another process holds it."""
        for _ in range(10):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            lock = filelock.FileLock(str(self.path), timeout=0)
            try:
                lock.acquire()
            except filelock.Timeout:
                raise self._in_progress() from None
            if _locks_the_file_at(lock, self.path):
                break
            lock.release()  # locked a file another run had just removed: try the new one
        self._lock = lock
        self.owner_path.write_text(json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                                               "started": time.strftime("%Y-%m-%d %H:%M:%S"),
                                               "command": mask_passwords(" ".join(sys.argv))}), encoding="utf-8")

    def release(self, *, remove: bool = False) -> None:
        """Let go of the lock; with `remove`, also of its file and of the folders left empty (a run that
        failed before writing anything leaves no trace)."""
        if self._lock is None:
            return
        self.owner_path.unlink(missing_ok=True)
        if remove:
            # The lock file goes before the lock is released; `acquire` checks that the file it locked
            # is still the one at the path, so a process that opened it just before cannot win.
            self.path.unlink(missing_ok=True)
            self._lock.release()
            for folder in (self.path.parent, self.path.parent.parent, self.path.parent.parent.parent):
                try:
                    folder.rmdir()  # only if empty
                except OSError:
                    break
        else:
            self._lock.release()
        self._lock = None

    def check_free(self) -> None:
        """`RunInProgressError` if a live process holds the lock. Looks only where a lock file exists (a
        config never run gets no folder). A run of the same config starting at this very moment may take
        this brief look for a live run and stop: it was not alone either."""
        if not self.path.exists():
            return
        lock = filelock.FileLock(str(self.path), timeout=0)
        try:
            lock.acquire()
        except filelock.Timeout:
            raise self._in_progress() from None
        except OSError:
            return  # unreadable or just removed: the run's own acquire decides
        lock.release()

    def _in_progress(self) -> RunInProgressError:
        return RunInProgressError(
            f"another run of this config is in progress ({self._owner()}; work folder {self.work_dir}); "
            "wait for it to finish, stop it, or run a different config beside it (e.g. --set training.seed=2)")

    def _owner(self) -> str:
        try:
            owner = json.loads(self.owner_path.read_text(encoding="utf-8"))
            return f"process {owner['pid']} on {owner['host']}, started {owner['started']}"
        except (OSError, ValueError, KeyError):
            return "a process that is just starting"


def _locks_the_file_at(lock: filelock.BaseFileLock, path: Path) -> bool:
    """Whether the file `lock` holds is the one now at `path` (not one unlinked meanwhile)."""
    fd = getattr(getattr(lock, "_context", None), "lock_file_fd", None)
    if fd is None:  # another filelock version: cannot tell, trust it
        return True
    try:
        return os.fstat(fd).st_ino == os.stat(path).st_ino
    except OSError:
        return False
