"""Portable name generators (`kpipe export names-char --format onnx`) beside their SavedModel, in one run.

For each generator export given and each format (the SavedModel, ONNX and LiteRT, float and int8), in a fresh
process of its own: the network file's size, load time (process start to the first names), the latency of one
`generate` call of 10 names (p50/p99 over `--calls` calls, each with its own seed), names per second in calls of
256, the process's peak RSS, and greedy agreement: the share of (prefix, category) pairs whose greedy names
(`top_k=1`) are the SavedModel's. The order of the formats alternates between repeats.

    python benchmarks/portable_generators.py saved_models/names-char/1 saved_models/names-transformer/1 \
        --calls 100 --repeats 2

The portable folders are written beside each export (kept; an existing one is reused).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

from portable_exports import FORMATS, MEASURE_START, network_size  # run as `python benchmarks/...`: a sibling

PREFIXES = ["", "A", "Ma", "K", "Be", "S", "Ro", "T", "Ga", "Ni"]

MEASURE = MEASURE_START + r"""
folder, fmt, calls, prefixes = sys.argv[1], sys.argv[2], int(sys.argv[3]), json.loads(sys.argv[4])
categories = json.load(open(folder + "/generator.json"))["categories"] or [""]
if fmt == "savedmodel":  # loaded once, as a service would
    import tensorflow as tf
    from kpipe.exports.saved_model import load_saved_model
    loaded = load_saved_model(folder)
    def generate(prefix="", count=10, category="", top_k=0, seed=0):
        out = loaded.generate(prefix=tf.constant(prefix), count=tf.constant(count), temperature=tf.constant(1.0),
                              category=tf.constant(category), top_k=tf.constant(top_k), seed=tf.constant(seed))
        return [n.decode("utf-8") for n in out["names"].numpy()]
else:
    from kpipe.portable.generator import PortableGenerator
    generator = PortableGenerator.open(folder)
    def generate(prefix="", count=10, category="", top_k=0, seed=0):
        return generator.generate(prefix, count, 1.0, category, top_k, seed)
generate()
load = time.perf_counter() - started
latencies = []
for seed in range(calls):
    t = time.perf_counter(); generate(category=categories[seed % len(categories)], seed=seed)
    latencies.append(time.perf_counter() - t)
t = time.perf_counter()
for seed in range(4):
    generate(count=256, category=categories[seed % len(categories)], seed=seed)
per_second = 4 * 256 / (time.perf_counter() - t)
greedy = {f"{p}|{c}": generate(prefix=p, count=1, category=c, top_k=1)[0] for p in prefixes for c in categories}
latencies.sort()
print(json.dumps({"load_s": load, "p50_ms": 1000 * latencies[len(latencies) // 2],
                  "p99_ms": 1000 * latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))],
                  "names_per_s": per_second, "rss_mib": peak_rss_mib(), "greedy": greedy}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("exports", nargs="+", type=Path, help="generator export version folders")
    parser.add_argument("--calls", type=int, default=100, help="generate calls of 10 names timed per variant")
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    from kpipe.exports.portable import export_portable, portable_name

    for source in args.exports:
        folders = {}
        for fmt, quantize in FORMATS:
            target = source.parent / portable_name(source.name, fmt, quantize)
            folders[fmt, quantize] = (source if fmt == "savedmodel" else
                                      target if target.exists() else export_portable(source, fmt, quantize))
        runs: dict = {key: [] for key in FORMATS}
        for repeat in range(args.repeats):
            for key in (FORMATS if repeat % 2 == 0 else FORMATS[::-1]):
                done = subprocess.run([sys.executable, "-c", MEASURE, str(folders[key]), key[0], str(args.calls),
                                       json.dumps(PREFIXES)], capture_output=True, text=True, timeout=1800)
                if done.returncode:
                    sys.exit(f"{key} failed:\n{done.stderr[-3000:]}")
                runs[key].append(json.loads(done.stdout.strip().splitlines()[-1]))
        reference = runs[FORMATS[0]][0]["greedy"]
        print(f"\n{source} ({args.calls} calls of 10 names, medians of {args.repeats} repeats)")
        print(f"{'format':<16} {'KiB':>8} {'load s':>7} {'p50 ms':>7} {'p99 ms':>7} {'names/s':>8} {'RSS MiB':>8} "
              f"{'greedy =':>8}")
        for key in FORMATS:
            median = {m: statistics.median(r[m] for r in runs[key])
                      for m in ("load_s", "p50_ms", "p99_ms", "names_per_s", "rss_mib")}
            same = sum(runs[key][0]["greedy"][k] == v for k, v in reference.items()) / len(reference)
            name = key[0] if key[1] == "none" else f"{key[0]} {key[1]}"
            print(f"{name:<16} {network_size(folders[key], key[0]) / 1024:>8.0f} {median['load_s']:>7.2f} "
                  f"{median['p50_ms']:>7.2f} {median['p99_ms']:>7.2f} {median['names_per_s']:>8.0f} "
                  f"{median['rss_mib']:>8.0f} {100 * same:>7.1f}%")


if __name__ == "__main__":
    main()
