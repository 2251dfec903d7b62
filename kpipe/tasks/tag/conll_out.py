"""`kpipe tag EXPORT --file FILE --conll`: a CoNLL column file tagged line by line. Each word line gets the predicted
tag as a new last column, a `-DOCSTART-` line an `O` (as conlleval reads them), blank lines stay; the words are the
file's own (through `tag_tokens`, not split again), so the output lines up with the input: with the gold tags in
the input, conlleval or seqeval scores it as it stands."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from kpipe.errors import KpipeError

BATCH = 256  # sentences per call of the SavedModel


def conll_sentences(text: str, path: str | Path, token_column: int = 0) -> tuple[list[str], list[list[int]]]:
    """(the file's lines, each sentence's word lines by index), the columns checked before any model loads.

    Raises:
        KpipeError: a word line with another number of columns than the first (naming file and line), a token column
            the lines do not have, no sentence at all.
    """
    lines = [line.rstrip("\r") for line in text.split("\n")]
    sentences, current, columns = [], [], None
    for index, line in enumerate(lines):
        parts = line.split()
        if not parts or parts[0] == "-DOCSTART-":
            if current:
                sentences.append(current)
                current = []
            continue
        if columns is None:
            columns = len(parts)
            if not -columns <= token_column < columns:
                raise KpipeError(f"{path}:{index + 1}: --token-column {token_column}, but the lines have {columns} "
                                 "column(s)")
        if len(parts) != columns:
            raise KpipeError(f"{path}:{index + 1}: {len(parts)} columns, but the file's first word line has "
                             f"{columns}; every line of a CoNLL file has the same columns (a word holds no space)")
        current.append(index)
    if current:
        sentences.append(current)
    if not sentences:
        raise KpipeError(f"{path} holds no sentences: a CoNLL file has a word per line (its columns separated by "
                         "spaces or tabs) and a blank line between sentences")
    return lines, sentences


def tag_conll(model_dir: str | Path, lines: list[str], sentences: list[list[int]], token_column: int = 0,
              on_batch: Callable[[int], None] | None = None) -> list[str]:
    """`lines` with each word line's predicted tag appended (and `O` on `-DOCSTART-` lines); `model_dir` a SavedModel
    export or its portable export."""
    from kpipe.tasks.tag.predict import tag_tokens

    tags_of = tag_tokens(model_dir)
    tagged = list(lines)
    for index, line in enumerate(lines):
        if line.split()[:1] == ["-DOCSTART-"]:
            tagged[index] = f"{line} O"
    for begin in range(0, len(sentences), BATCH):
        chunk = sentences[begin:begin + BATCH]
        words = [[lines[i].split()[token_column] for i in sentence] for sentence in chunk]
        for sentence, row in zip(chunk, tags_of(words)):
            for i, tag in zip(sentence, row):
                tagged[i] = f"{lines[i]} {tag}"
        if on_batch:
            on_batch(len(chunk))
    return tagged
