"""Two `kpipe tune` processes on one study, each pinned to one core (`taskset`), against one process with all
the cores: the same study size (trials finished, counted over both processes), wall time of each way.

Small models often use two threads poorly, so two processes may finish sooner; this measures it. The
sampler is random and pruning off, so every trial is a full run and the two ways do comparable work.
The ways alternate over `--repeats`; each runs in a fresh folder with its own SQLite study.

    python benchmarks/tune_parallel.py --pipeline sentiment-bigrams --trials 8 [--set data.limit=8000 ...]
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tune_pruning import study_parser  # run as `python benchmarks/tune_parallel.py`: a sibling


def tune_command(args) -> list[str]:
    return [sys.executable, "-m", "kpipe", "tune", args.pipeline, "--trials", str(args.trials), "--pruner", "none",
            "--sampler", "random", "--seed", str(args.seed), *[a for o in args.set for a in ("--set", o)]]


def run_way(way: str, args, folder: Path) -> dict:
    import pandas as pd

    folder.mkdir(parents=True)
    cores = sorted(os.sched_getaffinity(0))
    if way == "one process":
        commands = [tune_command(args)]
    else:  # one process per core, each pinned to its core
        commands = [["taskset", "-c", str(core), *tune_command(args)] for core in cores[:2]]
    started = time.perf_counter()
    processes = [subprocess.Popen(c, cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                 for c in commands]
    errors = [p.communicate()[1] for p in processes]
    seconds = time.perf_counter() - started
    if any(p.returncode for p in processes):
        sys.exit(f"kpipe tune failed ({way}):\n" + "\n".join(e[-2000:] for e in errors))
    table = pd.read_csv(folder / "saved_models" / args.pipeline / "tune" / "trials.csv")
    finished = table[table["state"] == "complete"]
    return {"way": way, "processes": len(commands), "seconds": round(seconds, 1), "trials": len(finished),
            "trial_seconds_median": float(finished["seconds"].median()), "best": float(finished["value"].max())}


def main() -> None:
    args = study_parser(__doc__, trials=8).parse_args()
    if shutil.which("taskset") is None:
        sys.exit("taskset (util-linux) is needed to pin each process to a core")
    if len(os.sched_getaffinity(0)) < 2:
        sys.exit("needs at least two cores")

    results = []
    with tempfile.TemporaryDirectory(prefix="tune-parallel-") as tmp:
        for repeat in range(args.repeats):
            ways = ("one process", "two pinned") if repeat % 2 == 0 else ("two pinned", "one process")
            for way in ways:
                result = run_way(way, args, Path(tmp) / f"{repeat}-{way.replace(' ', '-')}")
                print(json.dumps(result), flush=True)
                results.append(result)

    print(f"\n{args.pipeline}, {args.trials} trials (random sampler, no pruning), "
          f"overrides: {' '.join(args.set) or '-'}")
    for way in ("one process", "two pinned"):
        times = [r["seconds"] for r in results if r["way"] == way]
        trial_times = [r["trial_seconds_median"] for r in results if r["way"] == way]
        per_trial = [r["seconds"] / r["trials"] for r in results if r["way"] == way]
        print(f"{way:12s} wall {statistics.median(times):7.0f} s (runs: {', '.join(f'{t:.0f}' for t in times)}), "
              f"{statistics.median(per_trial):.1f} s of wall per finished trial (a process that finds the count "
              f"reached still ends the trial it runs), median trial {statistics.median(trial_times):.0f} s")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
