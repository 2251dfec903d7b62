"""Where kpipe keeps what is expensive to compute and cheap to store: `KPIPE_CACHE_DIR`, else
`$XDG_CACHE_HOME/kpipe`, else `~/.cache/kpipe` (parsed word vectors, MSTL maps)."""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    if os.environ.get("KPIPE_CACHE_DIR"):
        return Path(os.environ["KPIPE_CACHE_DIR"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kpipe"
