"""A pretrained encoder fine-tuned by kpipe against kpipe's best classifier trained from scratch and the TF-IDF
baseline, on the same tweet splits, in one run: validation and test accuracy, macro F1, training seconds.
Then (unless `--throughput-repeats 0`) the training speed half: samples/s of kpipe's fine-tuning against
the keras-hub guide's recipe on the same checkpoint, alternating (`pretrained_throughput.py`'s measurement).

Every pipeline runs through `run_pipeline` in a temporary export folder; each run fits the TF-IDF + logistic
regression baseline on its own training split and scores it on the same test split, so the rows compare
like with like (the baseline is printed once, from the pretrained run, and checked equal in the other).

    python benchmarks/pretrained_finetune.py --preset /path/to/all-MiniLM-L6-v2
        [--pretrained sentiment-minilm-ensemble] [--scratch sentiment-ensemble] [--set training.epochs=2 ...]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def validation_accuracy(metrics: dict, training) -> float:
    """The validation figure of what the run kept: the ensemble's, else the kept epoch's."""
    from kpipe.training.loop import kept_epoch

    if "ensemble" in metrics:
        return metrics["ensemble"]["validation_accuracy"]["ensemble"]
    return metrics["history"][kept_epoch(metrics["history"], training) - 1]["val_accuracy"]


def run(name: str, overrides: list[str], folder: str) -> dict:
    from kpipe.tasks.named_pipelines import load_pipeline
    from kpipe.tasks.runner import run_pipeline

    config = load_pipeline(name, [*overrides, f'export.dir="{folder}"'])
    started = time.perf_counter()
    metrics = run_pipeline(config).metrics
    row = {"pipeline": name, "overrides": overrides, "validation_accuracy": validation_accuracy(metrics, config.training),
           "accuracy": metrics["accuracy"], "macro_f1": metrics["macro_f1"],
           "train_seconds": metrics["train_seconds_this_run"], "run_seconds": round(time.perf_counter() - started, 1),
           "test_examples": metrics["data"]["test"], "baseline": metrics["baseline"]}
    print(json.dumps(row), flush=True)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", required=True, help="a keras-hub preset or checkpoint folder")
    parser.add_argument("--pretrained", default="sentiment-minilm-ensemble",
                        help="the pretrained pipeline (sentiment-minilm or sentiment-minilm-ensemble)")
    parser.add_argument("--scratch", default="sentiment-ensemble", help="kpipe's best from-scratch tweet pipeline")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override for the pretrained pipeline")
    parser.add_argument("--set-both", action="append", default=[], metavar="KEY=VALUE",
                        help="override for both pipelines (a quick check: data.limit=600)")
    parser.add_argument("--throughput-repeats", type=int, default=3, help="0: accuracy only")
    parser.add_argument("--throughput-steps", type=int, default=60)
    parser.add_argument("--json", type=Path, help="write the raw figures here")
    args = parser.parse_args()

    from kpipe.tasks.named_pipelines import load_pipeline
    from kpipe.families.pretrained_classifier.config import pretrained_preset

    _, key = pretrained_preset(load_pipeline(args.pretrained).model)
    with tempfile.TemporaryDirectory(prefix="pretrained-finetune-") as folder:
        rows = [run(args.pretrained, [f'{key}="{args.preset}"', *args.set_both, *args.set], folder),
                run(args.scratch, args.set_both, folder)]
    baseline = rows[0]["baseline"]
    assert rows[1]["baseline"]["accuracy"] == baseline["accuracy"], "the two runs' test splits differ"

    print(f"\nTweets, {rows[0]['test_examples']} test examples; pretrained preset {args.preset}")
    print("| model | validation accuracy | test accuracy | macro F1 | training s |\n|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['pipeline']} {' '.join(o for o in r['overrides'] if 'preset' not in o)} | {r['validation_accuracy']:.4f} | "
              f"{r['accuracy']:.4f} | {r['macro_f1']:.4f} | {r['train_seconds']:,.0f} |")
    best_c = baseline["C"]
    print(f"| TF-IDF + logistic regression (C={best_c}) | {baseline['validation_accuracy_by_C'][str(best_c)]:.4f} | "
          f"{baseline['accuracy']:.4f} | {baseline['macro_f1']:.4f} | {baseline['fit_seconds']:,.0f} (fit) |")

    rates = {}
    if args.throughput_repeats:
        from pretrained_throughput import measure  # run as `python benchmarks/pretrained_finetune.py`: a sibling

        rates = measure(args.preset, limit=4000, batch=32, length=64, steps=args.throughput_steps,
                        repeats=args.throughput_repeats)
        print("\n| way | training samples/s: median (runs) |\n|---|---|")
        for name, values in rates.items():
            print(f"| {name} | {statistics.median(values):.1f} ({', '.join(f'{v:.1f}' for v in values)}) |")
        first, second = (statistics.median(v) for v in rates.values())
        print(f"kpipe trains {first / second:.2f}x as many samples per second")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"rows": rows, "throughput": rates}, indent=2))


if __name__ == "__main__":
    main()
