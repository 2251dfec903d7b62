"""What pruning saves in `kpipe tune`: the same study (pipeline, space, sampler, seed, trials) with the median
pruner and without any, each a fresh `kpipe tune` process in a folder of its own, run one after the other
(order alternating over `--repeats`).

`--pruners median median:2 none` adds a study whose median pruner stops no trial before epoch 2
(`kpipe tune --prune-after 2`).

Printed per study: the epochs all its trials trained, wall seconds, trials pruned, the best validation
figure and its standard error (binomial, on the validation split's size: sqrt(p(1-p)/n)). The target is
at least 40 % of the epochs saved at the same best figure, within one standard error.

    python benchmarks/tune_pruning.py --pipeline sentiment-bigrams --trials 16 [--set data.limit=8000 ...]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kpipe.errors import ConfigError
from kpipe.tuning.study import PRUNERS, TuneOptions


def run_study(pipeline: str, trials: int, pruner: str, seed: int, overrides: list[str], folder: Path) -> dict:
    """One study; `pruner` is a --pruner name, optionally with the epoch it may start at: "median:2"."""
    import pandas as pd

    folder.mkdir(parents=True)
    started = time.perf_counter()
    name, _, prune_after = pruner.partition(":")
    command = [sys.executable, "-m", "kpipe", "tune", pipeline, "--trials", str(trials), "--pruner", name,
               "--prune-after", prune_after or "1", "--seed", str(seed),
               *[a for o in overrides for a in ("--set", o)]]
    run = subprocess.run(command, cwd=folder, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if run.returncode != 0:
        sys.exit(f"kpipe tune failed ({pruner}):\n{run.stderr[-3000:]}")
    study = folder / "saved_models" / pipeline / "tune"
    table = pd.read_csv(study / "trials.csv")
    complete = table[table["state"] == "complete"]
    best = complete.loc[complete["value"].idxmax()]
    # each trial exports as a run with export.dir = its folder: trials/N/PIPELINE/1/
    metrics = json.loads(next((study / "trials" / str(int(best["trial"]))).glob("*/*/metrics.json")).read_text())
    n = metrics["data"]["validation"]
    value = float(best["value"])
    return {"pruner": pruner, "seconds": round(seconds, 1), "epochs": int(table["epochs"].fillna(0).sum()),
            "trials": len(table), "pruned": int((table["state"] == "pruned").sum()), "best": value,
            "best_trial": int(best["trial"]), "standard_error": math.sqrt(value * (1 - value) / n),
            "validation_examples": n, "best_test_accuracy": metrics.get("accuracy")}


def study_parser(description: str, trials: int) -> argparse.ArgumentParser:
    """The options both tuning benchmarks take (tune_parallel.py imports this)."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pipeline", default="sentiment-bigrams")
    parser.add_argument("--trials", type=int, default=trials)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=1, help="pairs of measurements, order alternating")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="config override")
    parser.add_argument("--json", type=Path, help="write the raw figures here")
    return parser


def main() -> None:
    parser = study_parser(__doc__, trials=16)
    parser.add_argument("--pruners", nargs="+", default=["median", "none"], metavar="PRUNER[:EPOCH]",
                        help=f"the studies to run, each one of {', '.join(PRUNERS)}, optionally with the earliest "
                             "epoch it may stop a trial at (--prune-after), e.g. median:2; the comparison needs "
                             "'none' and at least one other")
    parser.add_argument("--keep", type=Path, help="keep the studies (SQLite, trials) in this folder")
    args = parser.parse_args()
    for pruner in args.pruners:  # checked as `kpipe tune` checks --pruner and --prune-after
        name, _, epoch = pruner.partition(":")
        try:
            TuneOptions(pruner=name, prune_after=int(epoch or 1))
        except (ConfigError, ValueError) as error:
            parser.error(f"--pruners {pruner}: {error}")

    results = []
    with (contextlib.nullcontext(str(args.keep)) if args.keep else
          tempfile.TemporaryDirectory(prefix="tune-pruning-")) as tmp:
        for repeat in range(args.repeats):
            order = args.pruners if repeat % 2 == 0 else list(reversed(args.pruners))
            for pruner in order:
                result = run_study(args.pipeline, args.trials, pruner, args.seed, args.set,
                                   Path(tmp) / f"{repeat}-{pruner}")
                print(json.dumps(result), flush=True)
                results.append(result)

    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2))
    print(f"\n{args.pipeline}, {args.trials} trials, TPE seed {args.seed}, overrides: {' '.join(args.set) or '-'}")
    print(f"{'pruner':10s} {'epochs':>7s} {'pruned':>7s} {'seconds':>8s} {'best val':>9s} {'± s.e.':>7s} "
          f"{'its test':>9s}")
    for r in results:
        print(f"{r['pruner']:10s} {r['epochs']:7d} {r['pruned']:7d} {r['seconds']:8.0f} {r['best']:9.4f} "
              f"{r['standard_error']:7.4f} {r['best_test_accuracy'] or float('nan'):9.4f}")
    full = [r for r in results if r["pruner"] == "none"]
    error = max(r["standard_error"] for r in results)
    for pruner in dict.fromkeys(r["pruner"] for r in results if r["pruner"] != "none") if full else ():
        pruned = [r for r in results if r["pruner"] == pruner]
        saved = 1 - sum(r["epochs"] for r in pruned) / sum(r["epochs"] for r in full)
        gap = sum(r["best"] for r in pruned) / len(pruned) - sum(r["best"] for r in full) / len(full)
        print(f"{pruner}: saved {saved:.0%} of the epochs (target: at least 40 %); best validation figure "
              f"{gap:+.4f} against the unpruned study ({'within' if abs(gap) <= error else 'outside'} one "
              f"standard error, {error:.4f})")


if __name__ == "__main__":
    main()
