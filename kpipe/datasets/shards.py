"""Sharded tables read a batch of rows at a time: a glob or a folder of Parquet, CSV/TSV or JSON Lines files
(compressed or not) or TFRecord files of `tf.train.Example`s (.tfrecord, or .tfrecord.gz), never loaded whole.

Parquet goes through pyarrow's row-group reader, CSV/TSV and JSON Lines through pandas' chunked readers
(decompressing on the fly), TFRecord through tf.data's reader (each wanted feature a single string, integer or
float per example, as the first example of the shard has it). CSV rows end at a newline only: pyarrow's CSV reader ends a row at a bare carriage
return, which pandas writes unquoted inside a text (tweets have them). Each batch is a pandas DataFrame holding
only the wanted columns, as text.
"""

from __future__ import annotations

import glob
import zlib
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

from kpipe.datasets.files import TABLE_SUFFIXES, compression_of, csv_quoting, is_table, table_kind
from kpipe.errors import DataError

if TYPE_CHECKING:
    import pandas as pd

GLOB_CHARACTERS = "*?["
RECORD_SUFFIXES = (".tfrecord", ".tfrecord.gz")
SHARD_SUFFIXES = (*TABLE_SUFFIXES, *RECORD_SUFFIXES)
BATCH_ROWS = 4096
# What a damaged file raises, by library: truncated gzip (EOFError, zlib.error), bad bytes (UnicodeDecodeError),
# pyarrow's ArrowInvalid (a ValueError) and ArrowIOError (an OSError), pandas' ParserError (a ValueError).
READ_ERRORS = (OSError, ValueError, EOFError, zlib.error, UnicodeDecodeError)


class BadShardError(DataError):
    """One shard cannot be read: `path` names it (skipped under `data.skip_bad_shards`)."""

    def __init__(self, path: Path, reason: str):
        super().__init__(f"shard {path} cannot be read ({reason}): fix or remove it, or set "
                         "data.skip_bad_shards=true to skip unreadable shards")
        self.path = path


def is_records(path: Path) -> bool:
    """Whether `path` is a TFRecord shard by its name."""
    return path.name.lower().endswith(RECORD_SUFFIXES)


def is_shard(path: Path) -> bool:
    """Whether `path` is a shard kpipe reads, by its name: a table file or a TFRecord file."""
    return is_table(path) or is_records(path)


def is_shard_pattern(path: str) -> bool:
    """Whether `--data path` names shards: a glob, or a folder holding shard files (not class sub-folders)."""
    if Path(path).is_file():  # "reviews [2024].csv" is a file, not a pattern
        return False
    if any(c in path for c in GLOB_CHARACTERS):
        return True
    where = Path(path)
    return where.is_dir() and any(is_shard(p) for p in where.iterdir() if p.is_file())


def list_shards(path: str) -> list[Path]:
    """The shard files `path` names (a glob, or every table file in a folder), sorted by name.

    Raises:
        DataError: nothing matches, or a match is not a table file kpipe reads.
    """
    where = Path(path).expanduser()
    if where.is_dir():
        found = sorted(p for p in where.iterdir() if p.is_file() and not p.name.startswith((".", "_")))
    else:
        found = sorted(Path(p) for p in glob.glob(str(where), recursive=True) if Path(p).is_file())
    if not found:
        raise DataError(f"no shard matches {path!r}: give a glob of table files (e.g. 'reviews/*.parquet') or a "
                        f"folder of them ({', '.join(TABLE_SUFFIXES)}, optionally compressed, or "
                        f"{', '.join(RECORD_SUFFIXES)})")
    others = [p for p in found if not is_shard(p)]
    if others:
        raise DataError(f"{others[0]} (matched by {path!r}) is not a shard file: shards end in "
                        f"{', '.join(TABLE_SUFFIXES)} (optionally compressed) or {', '.join(RECORD_SUFFIXES)}; "
                        "narrow the glob")
    return found


def read_batches(path: Path, columns: list[str] | None, *, encoding: str = "utf-8",
                 batch_rows: int = BATCH_ROWS) -> Iterator[pd.DataFrame]:
    """The `columns` of shard `path` as text (None: every column, as stored), `batch_rows` rows at a time (the
    last batch may be shorter).

    Raises:
        DataError: a wanted column is missing (naming the shard and its columns).
        BadShardError: the file is damaged (truncated archive, bad bytes, broken rows).
    """
    if is_records(path):
        yield from _record_batches(path, columns, batch_rows)
        return
    kind = table_kind(path)
    try:
        if kind in (".parquet", ".pq"):
            yield from _parquet_batches(path, columns, batch_rows)
        else:
            yield from _pandas_batches(path, kind, columns, encoding, batch_rows)
    except DataError:
        raise
    except READ_ERRORS as error:
        raise BadShardError(path, f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"[:300]) \
            from None


def columns_of(path: Path, *, encoding: str = "utf-8") -> list[str]:
    """The column names of shard `path` (its schema or header, or its first example's features)."""
    if is_records(path):
        return list(_record_kinds(path))
    kind = table_kind(path)
    try:
        if kind in (".parquet", ".pq"):
            import pyarrow.parquet as pq

            # pandas keeps a non-default index as "__index_level_0__": not a column of the data
            return [name for name in pq.read_schema(path).names if not name.startswith("__index_level_")]
        for batch in _pandas_batches(path, kind, None, encoding, 1):
            return list(batch.columns)
        return []
    except READ_ERRORS as error:
        raise BadShardError(path, f"{type(error).__name__}: {str(error)[:200]}") from None


def _missing(path: Path, columns: list[str], have: list[str]) -> None:
    missing = [c for c in columns if c not in have]
    if missing:
        raise DataError(f"shard {path} has no column {', '.join(map(repr, missing))}; its columns are "
                        f"{', '.join(map(repr, have))}: every shard needs the same columns (set data.text_column / "
                        "data.label_column / data.id_column to the shards' names)")


def _parquet_batches(path: Path, columns: list[str] | None, batch_rows: int) -> Iterator[pd.DataFrame]:
    import pyarrow.parquet as pq

    file = pq.ParquetFile(path)
    if columns is not None:
        _missing(path, columns, file.schema_arrow.names)
    for batch in file.iter_batches(batch_size=batch_rows, columns=columns):
        frame = batch.to_pandas()
        yield frame if columns is None else frame.astype(str).where(frame.notna(), "")


def _pandas_batches(path: Path, kind: str, columns: list[str] | None, encoding: str,
                    batch_rows: int) -> Iterator[pd.DataFrame]:
    import pandas as pd

    compression = compression_of(path)
    if kind == ".jsonl":
        reader = pd.read_json(path, lines=True, dtype=False, chunksize=batch_rows, compression=compression,
                              encoding=encoding, encoding_errors="strict")
    else:
        # Rows end at "\n" only: pandas' chunked C parser overflows its buffer on a bare "\r" inside an unquoted
        # text (pandas writes them unquoted; tweets have them); a Windows "\r\n" leaves a "\r", removed below.
        reader = pd.read_csv(path, sep="\t" if kind == ".tsv" else ",", dtype=str, keep_default_na=False,
                             chunksize=batch_rows, compression=compression, encoding=encoding,
                             encoding_errors="strict", lineterminator="\n", **csv_quoting(kind))
    with reader:
        for frame in reader:
            if kind != ".jsonl":  # a Windows "\r\n" leaves "\r" on the last column's name and values
                frame.columns = [str(c).removesuffix("\r") for c in frame.columns]
                last = frame.columns[-1]
                frame[last] = frame[last].str.removesuffix("\r")
            if columns is None:
                yield frame
                continue
            _missing(path, columns, list(frame.columns))
            yield frame[columns].astype(str).where(frame[columns].notna(), "")


def _records(path: Path):
    import tensorflow as tf

    return tf.data.TFRecordDataset(str(path), compression_type="GZIP" if path.name.lower().endswith(".gz") else "")


def _record_kinds(path: Path) -> dict[str, str]:
    """Each feature of the shard's first example, and its kind ("bytes_list", "int64_list" or "float_list")."""
    import tensorflow as tf

    try:
        for record in _records(path).take(1):
            example = tf.train.Example.FromString(record.numpy())
            return {name: feature.WhichOneof("kind") for name, feature in sorted(example.features.feature.items())}
    except (tf.errors.OpError, ValueError) as error:  # DataLossError: truncated or corrupt; DecodeError: not Examples
        raise BadShardError(path, f"{type(error).__name__}: {str(error).splitlines()[0][:200]}") from None
    return {}


def _record_batches(path: Path, columns: list[str] | None, batch_rows: int) -> Iterator[pd.DataFrame]:
    """Batches of a TFRecord shard of `tf.train.Example`s; every wanted feature one value per example."""
    import pandas as pd
    import tensorflow as tf

    kinds = _record_kinds(path)
    if not kinds:
        return
    columns = list(kinds) if columns is None else columns
    _missing(path, columns, list(kinds))
    dtypes = {"bytes_list": tf.string, "int64_list": tf.int64, "float_list": tf.float32}
    spec = {name: tf.io.FixedLenFeature([], dtypes[kinds[name]]) for name in columns}
    try:
        for batch in _records(path).batch(batch_rows).map(lambda records: tf.io.parse_example(records, spec)):
            yield pd.DataFrame({name: [value.decode("utf-8") if isinstance(value, bytes) else str(value)
                                       for value in batch[name].numpy().tolist()] for name in columns})
    except (tf.errors.OpError, UnicodeDecodeError) as error:
        raise BadShardError(path, f"{type(error).__name__}: {str(error).splitlines()[0][:200]}") from None
