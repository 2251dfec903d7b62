"""Secrets kept out of what kpipe prints and writes: the password of a database URL (`--storage
postgresql://user:secret@db/kpipe`) is shown as `***` in logs, lock owner notes and reports."""

from __future__ import annotations

import re

# scheme://user:password@host -> scheme://user:***@host (the password may hold anything but '@' and '/')
_PASSWORD = re.compile(r"(?P<head>\b[A-Za-z][A-Za-z0-9+.\-]*://[^:/@\s]*:)(?P<password>[^@/\s]*)(?P<tail>@)")


def mask_passwords(text: str) -> str:
    """`text` with every URL password replaced by `***`."""
    return _PASSWORD.sub(lambda m: f"{m['head']}***{m['tail']}", text)
