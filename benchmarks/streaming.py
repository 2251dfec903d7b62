"""Streaming from shards against the in-memory path, in one run: peak memory, training and prediction rows/s,
test accuracy.

The corpus is generated on the fly from real text: IMDB's 25,000 training reviews (../shared/data/imdb) cut into
sentences, and each generated row two to four sentences drawn (seeded) from reviews of one label, which it keeps
(a "sentence mixture"). Rows are written as Parquet shards of `--shard-rows` rows, and the same rows as one
Parquet file for the in-memory path.

For `--rows-both` rows (a size both paths hold) each path trains `imdb-bigrams` for one epoch, repeated
`--repeats` times with the order alternating, then predicts every row with `kpipe predict --file`; for
`--rows-big` rows (meant to be beyond what the in-memory path should hold) the streaming path alone trains and
predicts. Every command runs in its own process under GNU time, whose maximum resident set size is the peak
memory of the whole process (TensorFlow included).

    python benchmarks/streaming.py --imdb ../shared/data/imdb/train.csv.gz --rows-both 200000 \
        --rows-big 5000000 --repeats 2 --work /tmp/kpipe-streaming
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import numpy as np


def sentence_pools(imdb: Path) -> dict[int, list[str]]:
    import pandas as pd

    reviews = pd.read_csv(imdb)
    pools = {0: [], 1: []}
    for text, label in zip(reviews["text"], reviews["label"]):
        text = re.sub(r"<br\s*/?>", " ", str(text))
        pools[int(label)] += [s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if len(s.strip()) > 20]
    return pools


def write_corpus(pools: dict[int, list[str]], rows: int, folder: Path, shard_rows: int, seed: int,
                 single_file: bool) -> None:
    """`rows` sentence mixtures as Parquet shards in `folder/shards/` (and as `folder/all.parquet`)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    (folder / "shards").mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    arrays = {label: np.array(pool, dtype=object) for label, pool in pools.items()}
    whole = pq.ParquetWriter(folder / "all.parquet", pa.schema([("id", pa.string()), ("text", pa.string()),
                                                                  ("label", pa.int64())])) if single_file else None
    for number, start in enumerate(range(0, rows, shard_rows)):
        n = min(shard_rows, rows - start)
        labels = rng.integers(0, 2, n)
        counts = rng.integers(2, 5, n)
        texts = [" ".join(arrays[label][rng.integers(0, len(arrays[label]), k)]) for label, k in zip(labels, counts)]
        table = pa.table({"id": [f"row-{start + i}" for i in range(n)], "text": texts, "label": labels})
        pq.write_table(table, folder / "shards" / f"part-{number:05d}.parquet")
        if whole is not None:
            whole.write_table(table)
    if whole is not None:
        whole.close()


def timed(command: list[str], cwd: Path) -> tuple[float, float, subprocess.CompletedProcess]:
    """(wall seconds, peak RSS in GiB, the process) of one command under GNU time."""
    started = time.perf_counter()
    done = subprocess.run(["/usr/bin/time", "-f", "MAXRSS_KB=%M", *command], cwd=cwd, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    found = re.findall(r"MAXRSS_KB=(\d+)", done.stderr)
    with open(cwd / "commands.log", "a", encoding="utf-8") as log:  # every command's log lines, kept
        log.write(f"$ {' '.join(command)}\n{done.stderr}\n")
    if done.returncode != 0:
        print(done.stderr[-3000:], file=sys.stderr)
        raise SystemExit(f"failed: {' '.join(command)}")
    return seconds, int(found[-1]) / 2 ** 20, done


def train(data: str, cwd: Path, label: str, *, pipeline: str = "imdb-bigrams", seed: int = 1337,
          settings: tuple[str, ...] = ()) -> dict:
    cwd.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "kpipe", "run", pipeline, "--data", data, "--set", "training.epochs=1",
               "--set", f"data.seed={seed}"]
    if "*" in data:  # shards: each row's split from its id (the in-memory path shuffles row positions)
        command += ["--set", 'data.id_column="id"']
    for setting in settings:
        command += ["--set", setting]
    seconds, rss, _ = timed(command, cwd)
    versions = sorted((cwd / f"saved_models/{pipeline}").iterdir(), key=lambda p: int(p.name) if p.name.isdigit()
                      else -1)
    metrics = json.loads((versions[-1] / "metrics.json").read_text())
    steps = next((int(s.split("=")[1]) for s in settings if s.startswith("training.steps_per_epoch=")), 0)
    batch_size = tomllib.loads((versions[-1] / "config.toml").read_text())["training"]["batch_size"]
    rows = steps * batch_size if steps else metrics["data"]["train"]
    result = {"path": label, "train_rows": rows, "wall_s": round(seconds, 1), "peak_rss_gib": round(rss, 2),
              "train_s": metrics["train_seconds_this_run"],
              "train_rows_per_s": round(rows / metrics["train_seconds_this_run"], 1),
              "test_rows": metrics["data"]["test"], "test_accuracy": round(metrics["accuracy"], 4),
              "baseline": metrics["baseline"].get("name", "tfidf + logistic regression"),
              "baseline_accuracy": round(metrics["baseline"]["accuracy"], 4), "export": str(versions[-1])}
    print(json.dumps(result), flush=True)
    return result


def predict(export: str, data: str, output: str, cwd: Path, label: str, rows: int) -> dict:
    shutil.rmtree(cwd / output, ignore_errors=True)
    (cwd / output).unlink(missing_ok=True) if (cwd / output).is_file() else None
    seconds, rss, _ = timed([sys.executable, "-m", "kpipe", "predict", export, "--file", data, "--output", output],
                            cwd)
    result = {"path": label, "rows": rows, "wall_s": round(seconds, 1), "rows_per_s": round(rows / seconds, 1),
              "peak_rss_gib": round(rss, 2)}
    print(json.dumps(result), flush=True)
    return result


def standard_error(values: list[float]) -> float:
    return statistics.stdev(values) / len(values) ** 0.5 if len(values) > 1 else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--imdb", default="../shared/data/imdb/train.csv.gz")
    parser.add_argument("--rows-both", type=int, default=200_000, help="0: skip the size both paths hold")
    parser.add_argument("--rows-big", type=int, default=0, help="0: skip the streaming-only size")
    parser.add_argument("--shard-rows", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--work", default="/tmp/kpipe-streaming")
    parser.add_argument("--bilstm-steps", type=int, default=0,
                        help="with --rows-big: also train imdb-bilstm for this many batches over the big shards")
    parser.add_argument("--skip-big-bigrams", action="store_true", help="with --rows-big: the BiLSTM run only")
    args = parser.parse_args()
    work = Path(args.work)
    pools = sentence_pools(Path(args.imdb))
    print(f"corpus: {sum(map(len, pools.values()))} IMDB sentences ({len(pools[0])} negative, {len(pools[1])} "
          "positive), rows of 2-4 sentences of one label", flush=True)
    results = {"train": [], "predict": []}
    both = work / f"both-{args.rows_both}"
    if args.rows_both and not (both / "all.parquet").exists():
        write_corpus(pools, args.rows_both, both, args.shard_rows, seed=1, single_file=True)
    for repeat in range(args.repeats if args.rows_both else 0):
        order = [("in-memory", str(both / "all.parquet")), ("streaming", str(both / "shards" / "*"))]
        for label, data in (order if repeat % 2 == 0 else order[::-1]):  # another split and seed each repeat
            results["train"].append(train(data, both / f"run-{label}-{repeat}", label, seed=1337 + repeat))
    for label, data, output in ((("in-memory", str(both / "all.parquet"), "answers.parquet"),
                                 ("streaming", str(both / "shards" / "*"), "answers")) if args.rows_both else ()):
        export = next(r["export"] for r in results["train"] if r["path"] == label)
        results["predict"].append(predict(export, data, output, both, label, args.rows_both))
    if args.rows_big:
        big = work / f"big-{args.rows_big}"
        if not (big / "shards").exists():
            started = time.perf_counter()
            write_corpus(pools, args.rows_big, big, args.shard_rows, seed=2, single_file=False)
            print(f"wrote {args.rows_big} rows in {time.perf_counter() - started:.0f} s", flush=True)
        if not args.skip_big_bigrams:
            trained = train(str(big / "shards" / "*"), big / "run", "streaming (big)")
            results["train"].append(trained)
            results["predict"].append(predict(trained["export"], str(big / "shards" / "*"), "answers", big,
                                              "streaming (big)", args.rows_big))
        if args.bilstm_steps:
            results["train"].append(train(str(big / "shards" / "*"), big / "run-bilstm",
                                          f"streaming (big), imdb-bilstm, {args.bilstm_steps} batches",
                                          pipeline="imdb-bilstm",
                                          settings=(f"training.steps_per_epoch={args.bilstm_steps}",)))
    print("\n| path | train rows | peak RSS (GiB) | training rows/s | test accuracy | baseline (same run) |")
    print("|---|---|---|---|---|---|")
    for label in dict.fromkeys(r["path"] for r in results["train"]):
        runs = [r for r in results["train"] if r["path"] == label]
        speeds, accuracies = [r["train_rows_per_s"] for r in runs], [r["test_accuracy"] for r in runs]
        print(f"| {label} | {runs[0]['train_rows']} | {max(r['peak_rss_gib'] for r in runs):.2f} | "
              f"{statistics.mean(speeds):.0f} ± {standard_error(speeds):.0f} | "
              f"{statistics.mean(accuracies):.4f} ± {standard_error(accuracies):.4f} | "
              f"{runs[0]['baseline']}: {runs[0]['baseline_accuracy']:.4f} |")
    print("\n| prediction | rows | peak RSS (GiB) | rows/s |")
    print("|---|---|---|---|")
    for r in results["predict"]:
        print(f"| {r['path']} | {r['rows']} | {r['peak_rss_gib']:.2f} | {r['rows_per_s']:.0f} |")


if __name__ == "__main__":
    main()
