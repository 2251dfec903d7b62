"""Arguments several `kpipe` commands share: parent parsers (`SHARED`), the MODEL and --file helps, and the
table options of the commands that answer a file of texts."""

from __future__ import annotations

import argparse

MODEL_HELP = "an export folder, a folder of versions, or a pipeline name"
FILE_HELP = "a table (.csv, .tsv, .parquet, .jsonl; read by --column) or a UTF-8 text file with one text per line"


def _parent(*arguments: tuple[tuple, dict]) -> argparse.ArgumentParser:
    parent = argparse.ArgumentParser(add_help=False)
    for args, kwargs in arguments:
        parent.add_argument(*args, **kwargs)
    return parent


# Options shared by several commands, given to `add_parser(parents=[...])`.
SHARED = {
    "export_dir": _parent((("--export-dir",), dict(default="saved_models", help="where pipeline names are looked up"))),
    "json": _parent((("--json",), dict(action="store_true", help="print JSON (one object per input line, or one "
                                                                 "object for the whole answer)"))),
    "vectors": _parent((("--vectors",), dict(default="glove:6B.50d",
                                             help="word vectors: glove:6B.50d (packaged, default), or a GloVe/word2vec "
                                                  "text file (.txt, .gz, .zip or archive.zip:member.txt)")),
                       (("--model",), dict(help="use the learned embedding of an exported classifier instead"))),
    "config": _parent((("pipeline",), dict(help="pipeline name (see `kpipe list`) or path to a .toml config")),
                      (("--set",), dict(action="append", default=[], metavar="KEY=VALUE",
                                        help="override a config value by dotted key, e.g. training.epochs=1 "
                                             "(repeatable)")),
                      (("--data",), dict(metavar="SOURCE", help="data instead of the pipeline's: a CSV/Parquet file, a "
                                                                "folder (a sub-folder per class), tfds:NAME, embedded:NAME"
                                                                ", or shards to stream: a quoted glob or a folder")),
                      (("--strategy",), dict(help="tf.distribute strategy: auto, default, one_device, mirrored, "
                                                  "multi_worker (cluster in TF_CONFIG) or tpu (same as --set "
                                                  "training.strategy=...)")),
                      (("--precision",), dict(help="float32, mixed_float16, mixed_bfloat16 or auto (bfloat16 "
                                                   "on CPUs with bfloat16 units; same as --set "
                                                   "training.precision=...)"))),
}


def add_table_args(p: argparse.ArgumentParser, answers: str) -> None:
    """--column and --output: tables in, the same rows with `answers` out."""
    p.add_argument("--column", help="the column of texts in a table --file (default: 'text', or its only column)")
    p.add_argument("--output", metavar="FILE", help=f"write the input's rows with {answers} to FILE (.csv, .tsv, "
                                                    ".parquet or .jsonl), in batches, with a progress bar")
    p.add_argument("--overwrite", action="store_true", help="replace --output FILE if it exists (refused otherwise)")
