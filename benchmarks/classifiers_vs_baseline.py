"""Every IMDB and tweet classify pipeline beside the TF-IDF + logistic regression baseline, same split, one run.

Each pipeline runs through `run_pipeline` (its own config, `--set` overrides applied to all), in a
temporary export folder; every run fits the baseline on its own training split and scores it on the
same test split (`metrics.json` → "baseline"), so each row compares like with like. Prints accuracy,
macro F1, validation accuracy of the model's best epoch and training seconds, model and baseline.

The IMDB pipelines read the training CSV (`--imdb`); their test split shares movies with their
training split, so both columns read about 2 points above what reviews of new movies get.

Usage: python benchmarks/classifiers_vs_baseline.py [--imdb ../shared/data/imdb/train.csv.gz]
           [--pipelines sentiment-bilstm imdb-bigrams ...] [--set key=value ...] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time

from kpipe.tasks.named_pipelines import load_pipeline

from kpipe.tasks.runner import run_pipeline

TWEETS = ["sentiment-bigrams", "sentiment-bilstm", "sentiment-glove", "sentiment-ensemble", "sentiment-transformer"]
IMDB = ["imdb-bigrams", "imdb-bilstm", "imdb-glove", "imdb-ensemble", "imdb-transformer"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--imdb", default="../shared/data/imdb/train.csv.gz", help="IMDB training CSV (text,label)")
    parser.add_argument("--pipelines", nargs="+", default=TWEETS + IMDB)
    parser.add_argument("--set", action="append", default=[], help="override for every pipeline, e.g. training.epochs=1")
    parser.add_argument("--json", help="also write the rows to this file")
    args = parser.parse_args()

    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for name in args.pipelines:
            overrides = (['data.source="file"', f'data.path="{os.path.abspath(args.imdb)}"']
                         if name.startswith("imdb") else []) + [f'export.dir="{folder}"'] + args.set
            config = load_pipeline(name, overrides)
            started = time.perf_counter()
            metrics = run_pipeline(config).metrics
            seconds = time.perf_counter() - started
            best_val = max((h.get("val_accuracy", float("nan")) for h in metrics["history"]), default=float("nan"))
            rows.append({"pipeline": name, "test": metrics["data"]["test"], "accuracy": metrics["accuracy"],
                         "macro_f1": metrics["macro_f1"], "best_val_accuracy": best_val,
                         "train_seconds": metrics["train_seconds_this_run"], "run_seconds": round(seconds, 1),
                         "baseline_accuracy": metrics["baseline"]["accuracy"],
                         "baseline_macro_f1": metrics["baseline"]["macro_f1"],
                         "baseline_fit_seconds": metrics["baseline"]["fit_seconds"],
                         **({"ensemble": metrics["ensemble"]} if "ensemble" in metrics else {})})
            print(json.dumps(rows[-1]), flush=True)

    print("\n| pipeline | test | accuracy | macro F1 | baseline accuracy | baseline macro F1 | model − baseline "
          "| train s | baseline fit s |\n|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['pipeline']} | {r['test']} | {r['accuracy']:.4f} | {r['macro_f1']:.4f} | "
              f"{r['baseline_accuracy']:.4f} | {r['baseline_macro_f1']:.4f} | "
              f"{r['accuracy'] - r['baseline_accuracy']:+.4f} | {r['train_seconds']:.0f} | "
              f"{r['baseline_fit_seconds']:.0f} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)


if __name__ == "__main__":
    main()
