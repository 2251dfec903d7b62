"""Loading GloVe text: kpipe's parser vs the keras-io line-by-line loop, on the same file, one run.

Writes the packaged glove.6B 50d vectors (400,000 words) as a GloVe text file, then times:
  reference  the keras-io recipe: for each line, `word, coefs = line.split(maxsplit=1)`,
             `np.fromstring(coefs, "f", sep=" ")`, stored in a dict;
  kpipe      `load_word_vectors(path)`;
  packaged   `load_word_vectors("glove:6B.50d")` (NumPy + Parquet files, no text parsing).
Each is the best of --repeats runs. Target: kpipe ≥ 5× the reference; packaged < 1 s.

Usage: python benchmarks/glove_loading.py [--repeats 3] [--limit 400000]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from kpipe.embeddings import WordVectors, load_word_vectors, write_glove_text


def keras_io_loop(path: Path) -> dict[str, np.ndarray]:
    embeddings_index = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            word, coefs = line.split(maxsplit=1)
            embeddings_index[word] = np.fromstring(coefs, "f", sep=" ")
    return embeddings_index


def best_of(repeats: int, fn, *args) -> tuple[float, object]:
    timings, result = [], None
    for _ in range(repeats):
        started = time.perf_counter()
        result = fn(*args)
        timings.append(time.perf_counter() - started)
    return min(timings), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--limit", type=int, default=400000, help="words written to the text file")
    args = parser.parse_args()

    packaged_seconds, packaged = best_of(args.repeats, load_word_vectors, "glove:6B.50d")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "glove.6B.50d.txt"
        write_glove_text(WordVectors(packaged.words[:args.limit], packaged.matrix[:args.limit]), path)
        size_mb = path.stat().st_size / 1e6
        reference_seconds, reference = best_of(args.repeats, keras_io_loop, path)
        kpipe_seconds, ours = best_of(args.repeats, load_word_vectors, str(path))
    assert len(reference) == len(ours) and np.allclose(reference["the"], ours.vector("the"))
    print(f"# {os.cpu_count()} CPUs · {len(ours):,} words x {ours.dim} · text file {size_mb:.0f} MB · "
          f"best of {args.repeats}")
    print(f"{'keras-io line loop (reference)':34s} {reference_seconds:7.2f} s")
    print(f"{'kpipe load_word_vectors(path)':34s} {kpipe_seconds:7.2f} s   {reference_seconds / kpipe_seconds:.1f}x faster")
    print(f"{'kpipe packaged glove:6B.50d':34s} {packaged_seconds:7.2f} s   (target < 1 s)")


if __name__ == "__main__":
    main()
