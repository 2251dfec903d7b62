"""Random vs GloVe-initialised embedding, same BiLSTM, same IMDB splits, one run.

For each training-set size, trains `imdb-bilstm` (embedding_dim 50) twice through `run_pipeline`:
once with a randomly initialised embedding and once starting from the packaged glove.6B 50d vectors
(fine-tuned). Validation and test sets are 1,000 reviews each, the same for both runs of a size.
Early stopping on validation loss keeps each run's best epoch.

Usage: python benchmarks/glove_small_data.py --csv ../shared/data/imdb/train.csv.gz [--sizes 1000 2000]
"""

from __future__ import annotations

import argparse
import tempfile
import time

from kpipe.pipelines import load_pipeline, run_pipeline


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--csv", default="../shared/data/imdb/train.csv.gz")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 2000])
    parser.add_argument("--epochs", type=int, default=8)
    args = parser.parse_args()

    rows = []
    for size in args.sizes:
        total = size + 2000
        base = ["data.source=file", f'data.path="{args.csv}"', f"data.limit={total}",
                f"data.validation_fraction={1000 / total}", f"data.test_fraction={1000 / total}",
                f"training.epochs={args.epochs}", "training.early_stopping_patience=2", "model.embedding_dim=50"]
        for name, extra in [("random init", []), ("glove:6B.50d", ['model.pretrained_embeddings="glove:6B.50d"'])]:
            with tempfile.TemporaryDirectory() as folder:
                started = time.perf_counter()
                metrics = run_pipeline(load_pipeline("imdb-bilstm", base + extra + [f'export.dir="{folder}"'])).metrics
            best_val = max(h["val_accuracy"] for h in metrics["history"])
            rows.append((size, name, metrics["data"]["train"], best_val, metrics["accuracy"],
                         time.perf_counter() - started))
            print(f"done: {rows[-1]}", flush=True)

    print(f"\n{'train':>6s} {'embedding':14s} {'best val acc':>12s} {'test acc':>9s} {'seconds':>8s}")
    for size, name, n_train, val, test, seconds in rows:
        print(f"{n_train:6d} {name:14s} {val:12.4f} {test:9.4f} {seconds:8.0f}")


if __name__ == "__main__":
    main()
