"""Random vs GloVe-initialised embedding, same BiLSTM, same IMDB splits, one run.

For each training-set size, trains the `imdb-bilstm` pipeline (embedding_dim 50) once per embedding
mode through `run_pipeline`:
  random      embedding learned from scratch (Keras' default uniform initialiser)
  trainable   starts from the packaged glove.6B 50d vectors, fine-tuned from the first step
  frozen      glove.6B 50d, never updated
  two_phase   glove.6B 50d frozen for 2 epochs, then fine-tuned at learning rate 1e-4
For the small sizes, validation and test are 1,000 reviews each (the same for every mode of a size);
"full" uses the whole CSV with the pipeline's own 10 % / 10 % validation and test splits. Early stopping
on validation loss keeps each run's best epoch.

Usage: python benchmarks/glove_vs_random.py [--csv ../shared/data/imdb/train.csv.gz]
           [--sizes 1000 2000 full] [--modes random trainable frozen two_phase] [--epochs 8]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

from kpipe.tasks.named_pipelines import load_pipeline

from kpipe.tasks.runner import run_pipeline

MODES = {
    "random": [],
    "trainable": ['model.pretrained_embeddings="glove:6B.50d"', 'model.embedding_training="trainable"'],
    "frozen": ['model.pretrained_embeddings="glove:6B.50d"', 'model.embedding_training="frozen"'],
    "two_phase": ['model.pretrained_embeddings="glove:6B.50d"', 'model.embedding_training="two_phase"',
                  "model.frozen_epochs=2", "model.fine_tune_learning_rate=0.0001"],
}


def size_overrides(size: str, csv: str) -> list[str]:
    base = ["data.source=file", f'data.path="{csv}"']
    if size == "full":
        return base
    total = int(size) + 2000
    return base + [f"data.limit={total}", f"data.validation_fraction={1000 / total}",
                   f"data.test_fraction={1000 / total}"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--csv", default="../shared/data/imdb/train.csv.gz")
    parser.add_argument("--sizes", nargs="+", default=["1000", "2000", "full"])
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=list(MODES))
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--patience", type=int, default=2)
    args = parser.parse_args()

    rows = []
    for size in args.sizes:
        common = size_overrides(size, args.csv) + [
            f"training.epochs={args.epochs}", f"training.early_stopping_patience={args.patience}",
            "model.embedding_dim=50"]
        for mode in args.modes:
            with tempfile.TemporaryDirectory() as folder:
                started = time.perf_counter()
                config = load_pipeline("imdb-bilstm", common + MODES[mode] + [f'export.dir="{folder}"'])
                metrics = run_pipeline(config).metrics
            best_val = max(h["val_accuracy"] for h in metrics["history"])
            rows.append((metrics["data"]["train"], mode, best_val, metrics["accuracy"], len(metrics["history"]),
                         time.perf_counter() - started))
            print(f"done: {rows[-1]}", flush=True)

    print(f"\n# {os.cpu_count()} CPUs · imdb-bilstm, embedding_dim 50, up to {args.epochs} epochs, "
          f"early stopping patience {args.patience}")
    print(f"{'train':>6s} {'embedding':10s} {'best val acc':>12s} {'test acc':>9s} {'epochs':>6s} {'seconds':>8s}")
    for n_train, mode, val, test, epochs, seconds in rows:
        print(f"{n_train:6d} {mode:10s} {val:12.4f} {test:9.4f} {epochs:6d} {seconds:8.0f}")


if __name__ == "__main__":
    main()
