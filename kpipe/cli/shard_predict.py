"""Batch prediction over shards, in bounded memory: one output shard per input shard, resumable.

    kpipe predict imdb-bigrams --file 'reviews/*.parquet' --column review --output predictions/

Each input shard is read a batch of rows at a time (`kpipe.datasets.shards`), answered, and appended to a
temporary file beside its output, renamed into place when the shard is done: a kill leaves no half-written
output shard, and a rerun skips the shards whose output exists. An output shard has the input's format
(compression dropped: `a.csv.gz` -> `a.csv`), the input's columns first, then the answers.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

from kpipe.datasets import shards
from kpipe.datasets.files import table_kind
from kpipe.errors import KpipeError
from kpipe.atomic import alive, fsync_file, fsync_folder


def output_shard(folder: Path, shard: Path) -> Path:
    """Where the answers to `shard` go: `folder/<name without its compression suffix>`, or for a TFRecord shard
    `folder/<name>.parquet` (answers are a table)."""
    if shards.is_records(shard):
        return folder / (shard.name[:shard.name.lower().rindex(".tfrecord")] + ".parquet")
    kind = table_kind(shard)
    name = shard.name[:shard.name.lower().rindex(kind) + len(kind)]
    return folder / (name if kind != ".pq" else name[:-3] + ".parquet")


def check_shard_job(pattern: str, column: str, output: str | None) -> tuple[list[Path], Path]:
    """The input shards and the output folder, checked before the model loads: a column every shard has, an
    output folder (created if missing, inside an existing folder), no two inputs writing one output.

    Raises:
        KpipeError: one line naming the problem and the fix.
    """
    if not output:
        raise KpipeError(f"--file {pattern} names shards: pass --output FOLDER for one output shard per input shard")
    folder = Path(output)
    if folder.suffix.lower() in (".csv", ".tsv", ".parquet", ".jsonl") or folder.is_file():
        raise KpipeError(f"--output {output} must be a folder for sharded input (one output shard per input shard)")
    if not folder.parent.is_dir():
        raise KpipeError(f"--output {output}: folder {folder.parent} does not exist")
    paths = shards.list_shards(pattern)
    for path in paths:  # every shard: a later one without the column was a traceback halfway through the job
        have = shards.columns_of(path)
        if column not in have:
            raise KpipeError(f"{path} has no column '{column}' (its columns: {', '.join(map(str, have))}); "
                             "pass --column NAME, or leave that shard out of the pattern")
    outputs = [output_shard(folder, p) for p in paths]
    clash = sorted({o.name for o in outputs if outputs.count(o) > 1})
    if clash:
        raise KpipeError(f"two input shards would both write {folder / clash[0]} (they differ only in compression); "
                         "predict them in two runs")
    if any(o.resolve() == p.resolve() for o, p in zip(outputs, paths)):
        raise KpipeError(f"--output {output} is the input folder: write the predictions to another folder")
    return paths, folder


class _AppendingWriter:
    """Rows appended batch by batch to one file of the output's format. A Parquet output takes its input columns'
    types from the input shard's schema (`input_schema`), not from the first batch: a column null in the first
    batch would be typed null there, and every later batch fail to cast."""

    def __init__(self, path: Path, kind: str, input_schema=None):
        self.path, self.kind, self.parquet, self.first, self.input_schema = path, kind, None, True, input_schema

    def write(self, frame) -> None:
        if self.kind == ".parquet":
            import pyarrow as pa
            import pyarrow.parquet as pq

            table = pa.Table.from_pandas(frame, preserve_index=False)
            if self.parquet is None:
                known = {f.name: f for f in self.input_schema} if self.input_schema is not None else {}
                fields = [known.get(f.name, f) if f.name in known else
                          (f.with_type(pa.string()) if pa.types.is_null(f.type) else f) for f in table.schema]
                self.parquet = pq.ParquetWriter(self.path, pa.schema(fields))
            self.parquet.write_table(table.cast(self.parquet.schema))
        elif self.kind == ".jsonl":
            with self.path.open("a", encoding="utf-8") as f:
                frame.to_json(f, orient="records", lines=True, force_ascii=False)
        else:
            frame.to_csv(self.path, sep="\t" if self.kind == ".tsv" else ",", index=False, mode="a", header=self.first)
        self.first = False

    def close(self) -> None:
        if self.parquet is not None:
            self.parquet.close()
        elif self.first:  # an input shard without rows: an output without rows
            self.path.write_text("", encoding="utf-8")


def remove_dead_partials(folder: Path) -> list[Path]:
    """Partial output shards left by killed runs (`.NAME.PID.partial` whose process is gone): a partial is up to a
    whole shard's answers, and nothing else would ever remove it."""
    removed = []
    for partial in folder.glob(".*.partial"):
        pid = partial.name[:-len(".partial")].rpartition(".")[2]
        if pid.isdecimal() and not alive(int(pid)):
            partial.unlink(missing_ok=True)
            removed.append(partial)
    return removed


MODEL_FILE = ".kpipe-model.json"  # which model answered the output shards of a folder


def check_same_model(folder: Path, model: str, overwrite: bool) -> None:
    """The output folder's shards are all one model's answers: a rerun with another model (or another version of
    it) is refused, or with `overwrite` answers every shard again.

    Raises:
        KpipeError: the folder holds another model's answers.
    """
    import json

    record = folder / MODEL_FILE
    earlier = json.loads(record.read_text(encoding="utf-8")).get("model") if record.is_file() else model
    if earlier != model and not overwrite:
        raise KpipeError(f"--output {folder} holds answers of {earlier}, not {model}: a rerun would mix two "
                         "models' answers; pass --overwrite to answer every shard again, or another folder")
    if overwrite and folder.is_dir():  # every output shard answered again
        for path in folder.iterdir():
            if path.is_file() and not path.name.startswith("."):
                path.unlink()
    folder.mkdir(exist_ok=True)
    record.write_text(json.dumps({"model": model}), encoding="utf-8")


def predict_shards(paths: list[Path], folder: Path, column: str, predict: Callable[[list[str]], object], *,
                   progress: bool = False, batch_rows: int = shards.BATCH_ROWS) -> tuple[int, int, int]:
    """Answer every input shard into its output shard with `predict(texts) -> DataFrame of answers`.

    Returns:
        (shards written, shards skipped because their output exists, rows answered).
    """
    import pandas as pd
    from tqdm.auto import tqdm

    folder.mkdir(exist_ok=True)
    remove_dead_partials(folder)
    written = skipped = rows = 0
    for path in tqdm(paths, unit="shard", disable=not progress):
        target = output_shard(folder, path)
        if target.exists():  # finished by an earlier run
            skipped += 1
            continue
        partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
        schema = None
        if table_kind(path) in (".parquet", ".pq"):
            import pyarrow.parquet as pq

            schema = pq.read_schema(path)
        writer = _AppendingWriter(partial, target.suffix.lower(), schema)
        try:
            for frame in shards.read_batches(path, None, batch_rows=batch_rows):
                found = predict(["" if v is None or v != v else str(v) for v in frame[column]])
                found = found.rename(columns={c: f"predicted_{c}" for c in found.columns if c in frame.columns})
                writer.write(pd.concat([frame.reset_index(drop=True), found], axis=1))
                rows += len(frame)
            writer.close()
            # flushed before its rename: a rerun skips shards whose output exists, so after a power cut none may
            # exist empty or cut short
            fsync_file(partial)
            os.replace(partial, target)
            fsync_folder(target.parent)
        except BaseException:
            writer.close()
            partial.unlink(missing_ok=True)
            raise
        written += 1
    return written, skipped, rows
