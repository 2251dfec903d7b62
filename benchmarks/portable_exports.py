"""Portable exports (`kpipe export`) beside the SavedModel they came from, in one run.

For each export folder given and each format (the SavedModel itself, ONNX and LiteRT, float and int8): the
network file's size, load time, single-text latency (p50/p99 over the test texts, one text per call), batched
rows/s (batches of 256), the process's peak RSS, and test accuracy on the pipeline's test split; each variant
measured in its own fresh process (so RSS and load time are its own), the order alternating between repeats.
Then the cold start of `kpipe predict` (process start to answer) on each format.

    python benchmarks/portable_exports.py saved_models/sentiment-bilstm/1 saved_models/imdb-bigrams/1 \
        --texts 500 --repeats 2

The portable folders are written beside each export (kept; an existing one is reused).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

FORMATS = [("savedmodel", "none"), ("onnx", "none"), ("onnx", "int8"), ("litert", "none"), ("litert", "int8")]

# The start of each measuring process's code (portable_generators.py's too): its clock and its peak memory
MEASURE_START = r"""
import json, sys, time
started = time.perf_counter()

def peak_rss_mib():
    # VmHWM: this process's own peak (getrusage's ru_maxrss survives exec, so it would count the parent's)
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
"""

MEASURE = MEASURE_START + r"""
folder, fmt, texts_file = sys.argv[1], sys.argv[2], sys.argv[3]
texts, labels = json.load(open(texts_file))
if fmt == "savedmodel":
    import tensorflow as tf
    from kpipe.exports.saved_model import load_saved_model  # registers TensorFlow Text's ops (WordPiece) first
    loaded = load_saved_model(folder)
    def predict(batch):
        return loaded.serve(tf.constant(batch))["probabilities"].numpy()
else:
    from kpipe.portable.runtime import PortableClassifier
    classifier = PortableClassifier.open(folder)
    predict = classifier.probabilities
predict(texts[:1])
load = time.perf_counter() - started
latencies = []
for text in texts:
    t = time.perf_counter(); predict([text]); latencies.append(time.perf_counter() - t)
t = time.perf_counter()
probabilities = [row for start in range(0, len(texts), 256) for row in predict(texts[start:start + 256])]
batched = len(texts) / (time.perf_counter() - t)
label_names = open(folder + "/labels.txt", encoding="utf-8").read().splitlines()
accuracy = sum(label_names[max(range(len(r)), key=lambda i: r[i])] == y
               for r, y in zip(probabilities, labels)) / len(texts)
latencies.sort()
print(json.dumps({"load_s": load, "p50_ms": 1000 * latencies[len(latencies) // 2],
                  "p99_ms": 1000 * latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))],
                  "rows_per_s": batched, "rss_mib": peak_rss_mib(),
                  "accuracy": accuracy, "probabilities": [[float(x) for x in r] for r in probabilities]}))
"""


def test_texts(source: Path, count: int) -> tuple[list[str], list[str]]:
    """The pipeline's own test split (its config.toml), the first `count` texts, with their label names."""
    from kpipe.tasks.named_pipelines import load_pipeline
    from kpipe.datasets.text_classification import load_text_classification

    config = load_pipeline(str(source / "config.toml"))
    splits = load_text_classification(config.data)
    texts = [str(t) for t in splits.test.texts[:count]]
    return texts, [splits.label_names[int(i)] for i in splits.test.labels[:count]]


def agreement(probabilities: list[list[float]], reference: list[int]) -> float:
    """The share of texts given the SavedModel's label."""
    return sum(max(range(len(r)), key=r.__getitem__) == y for r, y in zip(probabilities, reference)) / len(reference)


def largest_difference(probabilities: list[list[float]], reference: list[list[float]]) -> float:
    return max(abs(a - b) for row, other in zip(probabilities, reference) for a, b in zip(row, other))


def network_size(folder: Path, fmt: str) -> int:
    if fmt == "savedmodel":
        return sum(p.stat().st_size for p in (folder / "variables").iterdir())
    names = json.loads((folder / "kpipe.json").read_text())["network_files"]
    return sum((folder / name).stat().st_size for name in names)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("exports", nargs="+", type=Path, help="SavedModel version folders of classifiers")
    parser.add_argument("--texts", type=int, default=500, help="test texts per measurement")
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    from kpipe.exports.portable import export_portable, portable_name

    for source in args.exports:
        texts, labels = test_texts(source, args.texts)
        texts_file = source.parent / f".bench-texts-{source.name}.json"
        texts_file.write_text(json.dumps([texts, labels]))
        folders = {}
        for fmt, quantize in FORMATS:
            if fmt == "savedmodel":
                folders[(fmt, quantize)] = source
                continue
            target = source.parent / portable_name(source.name, fmt, quantize)
            folders[(fmt, quantize)] = target if target.exists() else export_portable(source, fmt, quantize)
        results = {key: [] for key in folders}
        for repeat in range(args.repeats):
            order = list(folders) if repeat % 2 == 0 else list(reversed(folders))
            for key in order:
                run = subprocess.run([sys.executable, "-c", MEASURE, str(folders[key]), key[0], str(texts_file)],
                                     capture_output=True, text=True, timeout=1800)
                if run.returncode:
                    raise SystemExit(f"{key}: {run.stderr[-2000:]}")
                results[key].append(json.loads(run.stdout.strip().splitlines()[-1]))
        cold = {}
        for key in (("savedmodel", "none"), ("onnx", "none"), ("litert", "none")):
            times = []
            for _ in range(args.repeats + 1):
                t = time.perf_counter()
                subprocess.run([sys.executable, "-m", "kpipe", "predict", str(folders[key]), "great crew, thanks"],
                               capture_output=True, timeout=300, check=True)
                times.append(time.perf_counter() - t)
            cold[key] = times
        print(f"\n{source} ({len(texts)} test texts, {args.repeats} repeats in alternating order; medians, "
              "spread min-max)")
        print(f"{'format':18s} {'network KiB':>11s} {'load s':>14s} {'p50 ms':>14s} {'p99 ms':>14s} "
              f"{'rows/s':>16s} {'RSS MiB':>8s} {'accuracy':>8s} {'same label':>10s} {'max |dp|':>9s}")
        reference_p = results[("savedmodel", "none")][0]["probabilities"]
        reference = [max(range(len(r)), key=r.__getitem__) for r in reference_p]
        for key, runs in results.items():
            def cell(name, digits):
                values = [r[name] for r in runs]
                return (f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}-"
                        f"{max(values):.{digits}f})")
            print(f"{key[0] + ('-' + key[1] if key[1] != 'none' else ''):18s} "
                  f"{network_size(folders[key], key[0]) / 1024:11.0f} {cell('load_s', 2):>14s} "
                  f"{cell('p50_ms', 2):>14s} {cell('p99_ms', 2):>14s} {cell('rows_per_s', 0):>16s} "
                  f"{statistics.median(r['rss_mib'] for r in runs):8.0f} {runs[0]['accuracy']:8.4f} "
                  f"{agreement(runs[0]['probabilities'], reference):10.4f} "
                  f"{largest_difference(runs[0]['probabilities'], reference_p):9.2e}")
        print("cold `kpipe predict` (process start to answer), s: " + ", ".join(
            f"{key[0]} {statistics.median(v):.2f} ({min(v):.2f}-{max(v):.2f})" for key, v in cold.items()))
        texts_file.unlink()


if __name__ == "__main__":
    main()
