"""Examples from files on disk: CSV/TSV/Parquet tables and aclImdb-style class folders."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from kpipe.errors import DataError

if TYPE_CHECKING:
    import pandas as pd  # imported where used: it takes half a second, and parsing a config needs none

TABLE_SUFFIXES = (".csv", ".tsv", ".parquet", ".pq", ".jsonl")
COMPRESSION_SUFFIXES = (".gz", ".bz2", ".zip", ".xz", ".zst")


def table_kind(path: Path) -> str:
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] in COMPRESSION_SUFFIXES:
        suffixes = suffixes[:-1]
    kind = suffixes[-1] if suffixes else ""
    if kind not in TABLE_SUFFIXES:
        raise DataError(f"cannot tell the format of {path}: expected a name ending in "
                        f"{', '.join(TABLE_SUFFIXES)} (optionally compressed with {', '.join(COMPRESSION_SUFFIXES)})")
    return kind


# The compression a name's last suffix names (any case: `reviews.CSV.GZ` too), as pandas calls it.
COMPRESSIONS = {".gz": "gzip", ".bz2": "bz2", ".zip": "zip", ".xz": "xz", ".zst": "zstd"}


def compression_of(path: Path) -> str | None:
    """The compression of `path` by its name, or None. Raises DataError for zstd without `zstandard`."""
    compression = COMPRESSIONS.get(path.suffix.lower())
    if compression == "zstd":
        from kpipe import dependencies

        if not dependencies.installed("zstandard"):
            raise DataError(f"{path} is compressed with Zstandard, which needs the zstandard package: "
                            "pip install zstandard (or decompress it: zstd -d FILE)")
    return compression


def is_table(path: Path) -> bool:
    """Whether the name ends in a table format kpipe reads (optionally compressed)."""
    try:
        table_kind(path)
        return True
    except DataError:
        return False


ENCODING_FIX = "re-save the file as UTF-8, or set data.encoding (e.g. --set data.encoding=latin-1)"


def _describe_decode_error(path: Path, error: UnicodeDecodeError, encoding: str, fix: str) -> DataError:
    return DataError(f"{path} is not valid {encoding}: byte 0x{error.object[error.start]:02x} at offset "
                     f"{error.start} cannot be decoded; {fix}")


def read_text(path: str | Path, *, encoding: str = "utf-8") -> str:
    """A whole text file (decompressed when its name ends in .gz, .bz2, .xz, .zst or .zip), decoded strictly.

    Raises:
        DataError: missing file, or bytes that are not `encoding` (with the line number and the fix).
    """
    path = Path(path)
    if not path.is_file():
        raise DataError(f"file not found: {path}")
    data = _decompress(path, compression_of(path))
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as error:
        line = data[:error.start].count(b"\n") + 1
        raise DataError(f"{path} is not valid {encoding} (line {line}); re-save it as UTF-8 or set data.encoding") \
            from None


def _decompress(path: Path, compression: str | None) -> bytes:
    import bz2
    import gzip
    import lzma
    import zipfile

    data = path.read_bytes()
    try:
        if compression == "gzip":
            return gzip.decompress(data)
        if compression == "bz2":
            return bz2.decompress(data)
        if compression == "xz":
            return lzma.decompress(data)
        if compression == "zstd":
            import zstandard

            return zstandard.ZstdDecompressor().stream_reader(data).read()
        if compression == "zip":
            with zipfile.ZipFile(path) as archive:
                names = archive.namelist()
                if len(names) != 1:
                    raise DataError(f"{path} holds {len(names)} files; a .zip data file must hold exactly one")
                return archive.read(names[0])
    except DataError:
        raise
    except Exception as error:  # corrupt archives raise each their own type
        raise DataError(f"cannot decompress {path} as {compression}: {error}") from None
    return data


def csv_quoting(kind: str) -> dict:
    """pandas' quoting options for a .csv or .tsv file: a TSV has no quoting (IANA's definition; a text that starts
    with `"` would otherwise swallow the rows after it), a CSV quotes as RFC 4180 does."""
    import csv

    return {"quoting": csv.QUOTE_NONE} if kind == ".tsv" else {}


def read_table(path: str | Path, *, encoding: str = "utf-8", missing_as_nan: bool = False,
               encoding_fix: str = ENCODING_FIX, as_text: bool = False) -> pd.DataFrame:
    """Read a CSV, TSV, Parquet or JSON lines file (compression inferred from the name).

    Args:
        path: the file.
        encoding: text encoding of CSV/TSV files. Decoding is strict: bad bytes are an error.
        missing_as_nan: read empty cells and "NA"/"NaN"-like strings as NaN (numbers); by default
            they stay text (an empty review is text, not a missing number).
        encoding_fix: what the error for undecodable bytes tells the user to do.
        as_text: read every CSV/TSV cell as the text it is (`00123` stays `00123`), as batch prediction writes
            its input's columns back.

    Raises:
        DataError: the file is missing, of an unknown format, unreadable, or not in `encoding`.
    """
    import pandas as pd
    path = Path(path)
    if not path.is_file():
        raise DataError(f"data file not found: {path} (give an existing CSV/TSV/Parquet file, "
                        "or a folder with one sub-folder per class)")
    kind = table_kind(path)
    compression = compression_of(path)
    try:
        if kind in (".parquet", ".pq"):
            return pd.read_parquet(path)
        if kind == ".jsonl":  # one JSON object per line; values kept as written (dtype=False)
            return pd.read_json(path, lines=True, encoding=encoding, encoding_errors="strict", dtype=False,
                                compression=compression)
        return pd.read_csv(path, sep="\t" if kind == ".tsv" else ",", encoding=encoding,
                           encoding_errors="strict", keep_default_na=missing_as_nan, compression=compression,
                           dtype=str if as_text else None, **csv_quoting(kind))
    except UnicodeDecodeError as error:
        raise _describe_decode_error(path, error, encoding, encoding_fix) from None
    except (ValueError, OSError, pd.errors.ParserError) as error:
        raise DataError(f"cannot read {path}: {error}") from None


def read_class_folders(path: str | Path, *, encoding: str = "utf-8", limit: int = 0,
                       split: str = "") -> pd.DataFrame:
    """Read an aclImdb-style folder: one sub-folder per class, one text file per example.

    `path/<class>/*.txt` gives `text` and `label` (the sub-folder name) columns. If `path` has
    `train/` and `test/` sub-folders (the aclImdb layout), both are read and a `split` column
    keeps the source's own test split; other sub-folders such as aclImdb's `unsup/` are only
    read as classes when they sit beside the class folders.

    Args:
        path: the folder.
        encoding: text encoding of the files (strict).
        limit: read at most this many files per split (0 = all), taking classes in turn so a
            small limit still sees every class.
        split: value of the `split` column ("" when the folder has no train/test layout).

    Raises:
        DataError: the folder is missing, has fewer than two class folders, or a file cannot be decoded.
    """
    import pandas as pd
    path = Path(path)
    if not path.is_dir():
        raise DataError(f"data folder not found: {path} (give a folder with one sub-folder per class)")
    if (path / "train").is_dir() and (path / "test").is_dir() and not split:
        return pd.concat([read_class_folders(path / name, encoding=encoding, limit=limit, split=name)
                          for name in ("train", "test")], ignore_index=True)
    classes = sorted(p for p in path.iterdir() if p.is_dir() and not p.name.startswith(".")
                     and p.name != "unsup" and any(p.glob("*.txt")))
    if len(classes) < 2:
        raise DataError(f"{path} should hold one sub-folder of .txt files per class (like aclImdb/train/pos "
                        f"and aclImdb/train/neg); found {len(classes)} such folder(s)")
    files_by_class = [sorted(c.glob("*.txt")) for c in classes]
    # Interleave classes so that `limit` takes a balanced slice.
    ordered = [(cls.name, file) for cls, file in _interleave(files_by_class, classes)]
    if limit:
        ordered = ordered[:limit]
    rows = []
    for label, file in ordered:
        try:
            rows.append((file.read_bytes().decode(encoding), label))
        except UnicodeDecodeError as error:
            raise _describe_decode_error(file, error, encoding, ENCODING_FIX) from None
    frame = pd.DataFrame(rows, columns=["text", "label"])
    if split:
        frame["split"] = split
    return frame


def _interleave(files_by_class, classes):
    longest = max(len(files) for files in files_by_class)
    for i in range(longest):
        for cls, files in zip(classes, files_by_class):
            if i < len(files):
                yield cls, files[i]
