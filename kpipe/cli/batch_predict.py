"""Batch prediction from files: a column of texts in a table in, the same table with the answers out.

    kpipe predict sentiment-bilstm --file tweets.csv --column text --output predictions.parquet

Inputs: CSV, TSV, Parquet or JSON lines (compressed or not), or a plain text file (one text per
line). Outputs: CSV, TSV, Parquet or JSON lines, by the name's ending; the input's columns first,
then the answers. The output is written to a temporary file beside it and renamed into place, so
an interrupted run leaves no half-written file. Everything the user can get wrong (a missing
column, bytes that are not UTF-8, an output format kpipe cannot write) is checked before the
model loads.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kpipe.atomic import write_atomically
from kpipe.datasets.files import read_table
from kpipe.errors import KpipeError
from kpipe.portable.runtime import PortableClassifier, is_portable

if TYPE_CHECKING:
    import pandas as pd

OUTPUT_SUFFIXES = (".csv", ".tsv", ".parquet", ".jsonl")


@dataclass
class TextTable:
    frame: pd.DataFrame | dict[str, list[str]]  # every input column, kept in the output (a dict for given texts)
    column: str           # the column of texts
    pair_column: str | None = None  # the column of each pair's second text (pair models)

    @property
    def texts(self) -> list[str]:
        return self._strings(self.column)

    @property
    def pairs(self) -> list[str] | None:
        """The second texts of the pairs, or None for single texts."""
        return None if self.pair_column is None else self._strings(self.pair_column)

    def _strings(self, column: str) -> list[str]:
        return [("" if value is None or value != value else str(value)) for value in self.frame[column]]


def read_texts(path: str | Path, column: str | None, lines: list[str] | None = None,
               pair_column: str | None = None, options: tuple[str, str] = ("--column", "--pair-column")) -> TextTable:
    """The texts to answer: a table's `column` (or its only column, or `text`), or the lines given; with
    `pair_column`, the table's column of second texts too. `options` name the two columns' options in messages.

    Raises:
        KpipeError: unreadable file, or no such column (naming the ones there are).
    """
    if lines is not None:  # no pandas: answering with a portable export needs only NumPy and its runtime
        return TextTable({column or "text": lines}, column or "text")
    frame = read_table(path, encoding_fix="re-save it as UTF-8", as_text=True)  # pass-through columns as written
    if column is None:
        column = "text" if "text" in frame.columns else frame.columns[0] if len(frame.columns) == 1 else None
        if column is None:
            raise KpipeError(f"{path} has several columns ({', '.join(map(str, frame.columns))}) and none is "
                             "named 'text': pass --column NAME")
    for name, option in zip((column, pair_column), options):
        if name is not None and name not in frame.columns:
            raise KpipeError(f"{path} has no column '{name}' (its columns: {', '.join(map(str, frame.columns))}); "
                             f"pass {option} NAME")
    return TextTable(frame, column, pair_column)


def pair_table(pairs: list[tuple[str, str]]) -> TextTable:
    """The pairs given on the command line (`--pair FIRST SECOND`), as a table of `text` and `text_pair`."""
    return TextTable({"text": [a for a, _ in pairs], "text_pair": [b for _, b in pairs]}, "text", "text_pair")


def check_output(output: str | Path, inputs: str | Path | None, overwrite: bool = False,
                 any_format: bool = False) -> Path:
    """The output path, checked before any work: a format kpipe writes (unless `any_format`: the command writes
    one format whatever the name), not the input file, a folder that exists, no file already there unless
    `overwrite`."""
    output = Path(output)
    if output.is_dir():
        raise KpipeError(f"--output {output} is a folder: name a file in it (e.g. {output / 'predictions.csv'})")
    if not any_format and output.suffix.lower() not in OUTPUT_SUFFIXES:
        raise KpipeError(f"cannot tell which format to write to {output}: name it with one of "
                         f"{', '.join(OUTPUT_SUFFIXES)}")
    if inputs is not None and output.resolve() == Path(inputs).resolve():
        raise KpipeError(f"--output {output} is the input file: write the predictions to another file")
    if not output.parent.is_dir():
        raise KpipeError(f"--output {output}: folder {output.parent} does not exist")
    if output.exists() and not overwrite:
        raise KpipeError(f"--output {output} exists: pass --overwrite to replace it, or name another file")
    return output


def write_table(frame: pd.DataFrame, output: Path) -> None:
    """Write `frame` in the format `output`'s suffix names, atomically (`kpipe.atomic`: a partial file beside it,
    created by the writer with the umask's permissions as any file the user writes, then renamed)."""
    kind = output.suffix.lower()

    def write(partial: Path) -> None:
        if kind == ".parquet":
            frame.to_parquet(partial, index=False)
        elif kind == ".jsonl":
            frame.to_json(partial, orient="records", lines=True, force_ascii=False)
        else:
            flat = frame.copy()
            for name in flat.columns:  # vectors as space-separated numbers: a CSV cell holds one string
                if len(flat) and isinstance(flat[name].iloc[0], list):
                    flat[name] = [" ".join(f"{v:.6g}" for v in row) for row in flat[name]]
            flat.to_csv(partial, sep="\t" if kind == ".tsv" else ",", index=False)

    write_atomically(output, write)


def answers(task: str, model_dir: Path, texts: list[str], *, progress: bool,
            pairs: list[str] | None = None) -> pd.DataFrame:
    """The model's answers to `texts` (with `pairs`, to the pairs (texts[i], pairs[i]): a reader's questions and
    contexts), one row each: label and probabilities, output, embedding, tags, or answer span."""
    import pandas as pd
    from tqdm.auto import tqdm

    with tqdm(total=len(texts), unit="text", disable=not progress, desc=model_dir.as_posix()) as bar:
        if task == "classify" and is_portable(model_dir):  # ONNX or LiteRT: no TensorFlow
            return _classify_frame(PortableClassifier.open(model_dir).predict_all(texts, on_batch=bar.update))
        if task == "classify":
            from kpipe.tasks.classify.predict import predict_texts

            return _classify_frame(predict_texts(model_dir, texts, on_batch=bar.update, pairs=pairs))
        if task == "translate":
            from kpipe.tasks.translate.predict import translate_texts

            return pd.DataFrame({"output": translate_texts(model_dir, texts, on_batch=bar.update)})
        if task == "embed":
            from kpipe.vectors.sentence_embeddings import embed_texts

            return pd.DataFrame({"embedding": [row.tolist() for row in embed_texts(model_dir, texts,
                                                                                   on_batch=bar.update)]})
        if task == "answer":
            from kpipe.tasks.answer.predict import answer_questions

            return pd.DataFrame(answer_questions(model_dir, texts, pairs, on_batch=bar.update))
        if task == "tag":
            from kpipe.tasks.tag.predict import marked, tag_texts

            found = tag_texts(model_dir, texts, on_batch=bar.update)
            # one string per cell, so every output format holds them: words and tags space-separated, entities as JSON
            return pd.DataFrame({"marked": [marked(a) for a in found], "tags": [" ".join(a["tags"]) for a in found],
                                 "entities": [json.dumps(a["entities"], ensure_ascii=False) for a in found]})
    raise ValueError(f"no batch prediction for task {task}")


def _classify_frame(found: list) -> pd.DataFrame:
    import pandas as pd

    labels = list(found[0].probabilities) if found else []
    return pd.DataFrame({"label": [p.label for p in found], "probability": [p.probability for p in found],
                         **{f"probability_{name}": [p.probabilities[name] for p in found] for name in labels}})


def predict_file(task: str, model_dir: Path, table: TextTable, output: Path, *, progress: bool) -> int:
    """Answer every text of `table` and write the table with the answers to `output`; the number of rows."""
    import pandas as pd

    found = answers(task, model_dir, table.texts, progress=progress, pairs=table.pairs)
    frame = pd.DataFrame(table.frame) if isinstance(table.frame, dict) else table.frame
    clash = [name for name in found.columns if name in frame.columns]
    found = found.rename(columns={name: f"predicted_{name}" for name in clash})  # keep the input's own columns
    write_table(pd.concat([frame.reset_index(drop=True), found], axis=1), output)
    return len(found)
