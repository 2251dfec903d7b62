"""Loading GloVe text: kpipe's loader vs the keras-io line-by-line loop, on the same file, one run.

Writes the packaged glove.6B 50d vectors (400,000 words) as a GloVe text file, then times, --repeats
times each, alternating which goes first:
  reference     the keras-io recipe: for each line, `word, coefs = line.split(maxsplit=1)`,
                `np.fromstring(coefs, "f", sep=" ")`, stored in a dict;
  kpipe parse   `load_word_vectors(path)` with an empty cache: the text is parsed (pyarrow);
  kpipe cached  `load_word_vectors(path)` again: the binary copy kept by the first load is mapped
                (`kpipe.vectors.cache`), what every later run that uses the file gets;
  packaged      `load_word_vectors("glove:6B.50d")` (NumPy + Parquet files, no text parsing).
Printed: median and range of each, and the reference's median over each of kpipe's.
Target: kpipe ≥ 5× the reference; packaged < 1 s.

Usage: python benchmarks/glove_loading.py [--repeats 5] [--limit 400000]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from kpipe.vectors.word_vectors import WordVectors, load_word_vectors, write_glove_text


def keras_io_loop(path: Path) -> dict[str, np.ndarray]:
    embeddings_index = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            word, coefs = line.split(maxsplit=1)
            embeddings_index[word] = np.fromstring(coefs, "f", sep=" ")
    return embeddings_index


def timed(fn, *args) -> tuple[float, object]:
    started = time.perf_counter()
    result = fn(*args)
    return time.perf_counter() - started, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--limit", type=int, default=400000, help="words written to the text file")
    args = parser.parse_args()

    seconds = {"reference": [], "parse": [], "cached": [], "packaged": []}
    packaged = load_word_vectors("glove:6B.50d")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "glove.6B.50d.txt"
        write_glove_text(WordVectors(packaged.words[:args.limit], packaged.matrix[:args.limit]), path)
        size_mb = path.stat().st_size / 1e6

        def kpipe_parse_then_cached():
            os.environ["KPIPE_CACHE_DIR"] = tempfile.mkdtemp(dir=folder)  # empty: this load parses
            took, ours = timed(load_word_vectors, str(path))
            seconds["parse"].append(took)
            took, cached = timed(load_word_vectors, str(path))
            seconds["cached"].append(took)
            assert cached.words == ours.words and np.array_equal(cached.matrix, ours.matrix)
            return ours

        for repeat in range(args.repeats):
            sides = ["reference", "kpipe"] if repeat % 2 == 0 else ["kpipe", "reference"]
            for side in sides:
                if side == "reference":
                    took, reference = timed(keras_io_loop, path)
                    seconds["reference"].append(took)
                else:
                    ours = kpipe_parse_then_cached()
            seconds["packaged"].append(timed(load_word_vectors, "glove:6B.50d")[0])
    assert len(reference) == len(ours) and np.allclose(reference["the"], ours.vector("the"))

    median = {name: float(np.median(values)) for name, values in seconds.items()}
    print(f"# {os.cpu_count()} CPUs · {len(ours):,} words x {ours.dim} · text file {size_mb:.0f} MB · "
          f"{args.repeats} repeats, alternating order · median (range)")

    def row(label: str, name: str, note: str = "") -> None:
        values = seconds[name]
        print(f"{label:40s} {median[name]:7.3f} s  ({min(values):.3f}–{max(values):.3f})   {note}")

    row("keras-io line loop (reference)", "reference")
    row("kpipe load_word_vectors(path), parse", "parse",
        f"{median['reference'] / median['parse']:.1f}x faster (first load of a file)")
    row("kpipe load_word_vectors(path), cached", "cached",
        f"{median['reference'] / median['cached']:.1f}x faster (every later load; target ≥ 5x)")
    row("kpipe packaged glove:6B.50d", "packaged", "(target < 1 s)")


if __name__ == "__main__":
    main()
