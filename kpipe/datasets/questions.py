"""Questions on passages with their answer spans, for the `answer` task (extractive QA, SQuAD style).

Files (`data.path`, a glob matching several files too, read in name order):
    SQuAD JSON   `{"data": [{"title", "paragraphs": [{"context", "qas": [{"id", "question", "answers":
                 [{"text", "answer_start"}], "is_impossible"}]}]}]}`: v1.1, and v2.0 whose unanswerable questions
                 have no answers (answered by "" = no answer); `.json`, compressed or not.
    tables       JSON Lines, CSV, TSV or Parquet with `question`, `context`, `answer_text`, `answer_start`
                 columns (`id` and `title` when present): a question with several gold answers takes several rows
                 (same id) or list cells.

An answer must be the text at its offset in its context. `data.misaligned` says what to do with one that is not:
"error" (one line naming how many and the first), "fix" (the nearest occurrence of the text in the context; not
found anywhere: dropped) or "drop"; either way counted in the report. Split by article (`title`, else the context),
never by question: the questions on one paragraph never straddle two splits.
"""

from __future__ import annotations

import dataclasses
import glob
import json
import logging
from pathlib import Path
from typing import ClassVar

from kpipe.config.constraints import group_default, one_of, one_of_class, setting
from kpipe.datasets import files
from kpipe.datasets.source import DataSourceConfig
from kpipe.datasets.split_settings import SplitSettings
from kpipe.datasets.splits import split_of_key
from kpipe.errors import DataError

log = logging.getLogger(__name__)

MISALIGNED = ("error", "fix", "drop")
SQUAD_SHAPE = '{"data": [{"title": ..., "paragraphs": [{"context": ..., "qas": [...]}]}]}'
TABLE_COLUMNS = ("question", "context", "answer_text", "answer_start")


@dataclasses.dataclass(frozen=True, kw_only=True)
class QuestionsDataConfig(SplitSettings, DataSourceConfig):
    """Where the questions come from, what to do with misaligned answers, and how they are split.

    Args:
        source: "file", or "shards" for a glob of several files (each read whole).
        path: SQuAD JSON or a table (see the module), or a glob matching several: the training split, or the
            whole corpus to split.
        validation_path, test_path: the corpus's own validation and test files ("" = split them off `path`).
        misaligned: "error", "fix" or "drop": an answer whose text is not at its `answer_start` in the context.
        limit: at most this many questions (0 = all): the first ones, whole articles kept together.
        validation_fraction, test_fraction: shares of the articles held out (when no file is given for them).
        seed: salts the article hash that makes the split.
        encoding: text encoding of files.
    """

    SOURCES: ClassVar[tuple[str, ...]] = ("file", "shards")  # shards: a glob (what `--data` makes of one)

    source: str = setting("file", one_of_class("SOURCES"))  # redeclared with its rule: a bare default drops it
    validation_path: str = ""
    test_path: str = ""
    misaligned: str = setting("error", one_of(MISALIGNED))
    test_fraction: float = group_default(SplitSettings, "test_fraction", 0.15)

    def describe(self) -> str:
        """As the other sources do ("file:squad.json"); a glob is read whole, file by file, not streamed as shards."""
        return f"files:{self.path}" if self.source == "shards" else super().describe()

    def check_files(self) -> None:
        """Raise DataError (before TensorFlow loads) when a path or glob names no file."""
        self.check_file_exists()
        for path in (self.path, self.validation_path, self.test_path):
            if path:
                matching_files(path)


@dataclasses.dataclass(frozen=True)
class Question:
    """One question: its gold answers are (text, character offset in the context); none for "no answer"."""

    id: str
    question: str
    context: str
    answers: tuple[tuple[str, int], ...]
    article: str  # the split key: the article's title, else the context


@dataclasses.dataclass
class QuestionSplits:
    train: list[Question]
    validation: list[Question]
    test: list[Question]
    fixed: int = 0    # misaligned answers moved to the nearest occurrence of their text
    dropped: int = 0  # misaligned answers dropped (and questions left without any answer)

    def sizes(self) -> dict:
        return {"questions": {split: len(getattr(self, split)) for split in ("train", "validation", "test")},
                "articles": {split: len({q.article for q in getattr(self, split)})
                             for split in ("train", "validation", "test")},
                "unanswerable": sum(not q.answers for split in (self.train, self.validation, self.test)
                                    for q in split),
                "misaligned_answers": {"fixed": self.fixed, "dropped": self.dropped}}

    @property
    def unanswerable(self) -> bool:
        """Whether the training split has questions without an answer (SQuAD v2.0): the model may answer none."""
        return any(not q.answers for q in self.train)


# === Reading ===

def matching_files(path: str) -> list[Path]:
    """`path` itself, or the files its glob matches in name order.

    Raises:
        DataError: nothing there.
    """
    if Path(path).expanduser().is_file():
        return [Path(path).expanduser()]
    if any(c in path for c in "*?["):
        found = sorted(Path(p) for p in glob.glob(str(Path(path).expanduser())) if Path(p).is_file())
        if found:
            return found
    raise DataError(f"data file not found: {path} (give SQuAD JSON, or a table with the columns "
                    f"{', '.join(TABLE_COLUMNS)}; a glob reads several)")


def read_questions(path: Path, encoding: str = "utf-8") -> list[dict]:
    """The raw questions of one file: dicts with id, question, context, answers [(text, start)], article,
    where (file and position, for messages)."""
    if files.is_table(path):
        return _read_table(path, encoding)
    text = files.read_text(path, encoding=encoding)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise DataError(f"{path} is not JSON (line {error.lineno}: {error.msg}); give SQuAD JSON ({SQUAD_SHAPE}) "
                        "or a table (.jsonl, .csv, .tsv, .parquet)") from None
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        raise DataError(f"{path} is JSON but not SQuAD's shape: expected {SQUAD_SHAPE}")
    questions = []
    for a, article in enumerate(data["data"]):
        title = article.get("title") if isinstance(article, dict) else None
        paragraphs = article.get("paragraphs") if isinstance(article, dict) else None
        if not isinstance(paragraphs, list):
            raise DataError(f"{path}: article {a} has no list of paragraphs: expected {SQUAD_SHAPE}")
        for p, paragraph in enumerate(paragraphs):
            context = paragraph.get("context") if isinstance(paragraph, dict) else None
            where = f"{path}: article {a} ({title or 'no title'}), paragraph {p}"
            if not isinstance(context, str) or not context.strip():
                raise DataError(f"{where} has an empty or missing context; every paragraph needs its text")
            for qa in paragraph.get("qas", []):
                try:
                    answers = [] if qa.get("is_impossible") else [(a_["text"], int(a_["answer_start"]))
                                                                  for a_ in qa["answers"]]
                    questions.append({"id": str(qa["id"]), "question": qa["question"], "context": context,
                                      "answers": answers, "article": f"{path.name}:{title or context}",
                                      "where": f"{where}, question {qa.get('id')}"})
                except (KeyError, TypeError, ValueError):
                    raise DataError(f"{where}: a question without id, question or answers "
                                    "[{text, answer_start}]") from None
    return questions


def _read_table(path: Path, encoding: str) -> list[dict]:
    table = files.read_table(path, encoding=encoding)
    missing = [c for c in TABLE_COLUMNS if c not in table.columns]
    if missing:
        raise DataError(f"{path} has no column {', '.join(missing)} (columns: {', '.join(map(str, table.columns))}); "
                        f"a table of questions needs {', '.join(TABLE_COLUMNS)}")
    grouped: dict[str, dict] = {}
    for row, record in enumerate(table.to_dict("records")):
        key = str(record["id"]) if "id" in table.columns else f"{record['question']}\n{record['context']}"
        context = record["context"]
        if not isinstance(context, str) or not context.strip():
            raise DataError(f"{path}, row {row + 2}: empty context; every question needs its passage")
        texts, starts = record["answer_text"], record["answer_start"]
        texts, starts = (list(texts), list(starts)) if hasattr(texts, "__len__") and not isinstance(texts, str) \
            else ([texts], [starts])
        entry = grouped.setdefault(key, {
            "id": key if "id" in table.columns else str(row), "question": str(record["question"]),
            "context": context, "answers": [],
            "article": f"{path.name}:{record['title']}" if "title" in table.columns else f"{path.name}:{context}",
            "where": f"{path}, row {row + 2}"})
        for text, start in zip(texts, starts):
            if isinstance(text, str) and text:
                try:
                    entry["answers"].append((text, int(start)))
                except (TypeError, ValueError):
                    raise DataError(f"{path}, row {row + 2}: answer_start {start!r} is not a character offset") \
                        from None
    return list(grouped.values())


def align(raw: list[dict], misaligned: str) -> tuple[list[Question], int, int]:
    """Questions whose answers are all at their offsets, after `misaligned`; and how many answers were fixed and
    dropped. Raises DataError for "error" when any answer is misaligned."""
    questions, fixed, dropped, bad = [], 0, 0, []
    for q in raw:
        kept = []
        for text, start in q["answers"]:
            if q["context"][start:start + len(text)] == text:
                kept.append((text, start))
                continue
            bad.append(q["where"])
            found = nearest(q["context"], text, start) if misaligned == "fix" else -1
            if found >= 0:
                kept.append((text, found))
                fixed += 1
            else:
                dropped += 1
        if q["answers"] and not kept:
            continue  # every answer was misaligned and could not be placed: the question cannot be scored
        questions.append(Question(q["id"], q["question"], q["context"], tuple(kept), q["article"]))
    if bad and misaligned == "error":
        raise DataError(f"{len(bad)} answer(s) are not the text at their answer_start in the context (first: "
                        f"{bad[0]}); set data.misaligned = \"fix\" (the nearest occurrence of the text) or \"drop\"")
    if bad:
        log.info("Misaligned answers: %d moved to the nearest occurrence of their text, %d dropped", fixed, dropped)
    return questions, fixed, dropped


def nearest(context: str, text: str, start: int) -> int:
    """The offset of the occurrence of `text` in `context` nearest to `start`, or -1."""
    best, at = -1, context.find(text)
    while at >= 0:
        if best < 0 or abs(at - start) < abs(best - start):
            best = at
        at = context.find(text, at + 1)
    return best


def load_questions(config: QuestionsDataConfig) -> QuestionSplits:
    """Read, align and split the questions.

    Raises:
        DataError: a missing or unreadable file, another shape, a missing column, an empty context, misaligned
            answers with misaligned="error", too few articles to split.
    """
    config.check_file_exists()

    def read(path: str) -> tuple[list[Question], int, int]:
        raw = [q for file in matching_files(path) for q in read_questions(file, config.encoding)]
        if not raw:
            raise DataError(f"{path} holds no questions")
        return align(raw, config.misaligned)

    questions, fixed, dropped = read(config.path)
    if config.limit:
        questions = questions[:config.limit]
    held_out = {}
    for split in ("validation", "test"):
        path = getattr(config, f"{split}_path")
        if path:
            held_out[split], more_fixed, more_dropped = read(path)
            fixed, dropped = fixed + more_fixed, dropped + more_dropped
    splits = {"train": [], "validation": [], "test": []}
    fractions = {"validation_fraction": 0.0 if "validation" in held_out else config.validation_fraction,
                 "test_fraction": 0.0 if "test" in held_out else config.test_fraction}
    for q in questions:
        splits[split_of_key(q.article, seed=config.seed, **fractions)].append(q)
    splits.update(held_out)
    if not splits["train"] or not splits["test"]:
        articles = len({q.article for q in questions})
        raise DataError(f"{config.path} has {articles} article(s): too few to split by article into train and test "
                        "(give more, or data.test_path)")
    return QuestionSplits(splits["train"], splits["validation"], splits["test"], fixed, dropped)
