"""Cost of one BiLSTM training step by sequence length, with and without a padding mask.

Explains the throughput figures of imdb_bilstm_throughput.py: bucketing shortens the padded
length, while masking (needed for post-padded batches) adds per-time-step work on CPU. Same
model as imdb-bilstm; random token ids; steady state (after tracing), batch 64 unless --batch;
each cell is the fastest of --repeats timings, since this machine's speed drifts.

Usage: python benchmarks/rnn_step_cost.py [--lengths 50 100 150 200] [--steps 8]
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402


def step_seconds(mask: bool, length: int, batch: int, steps: int, repeats: int) -> float:
    """Seconds per training step: the best of `repeats` timings of `steps` steps (robust to noise)."""
    keras.utils.set_random_seed(0)
    inputs = keras.Input((None,), dtype="int32")
    x = keras.layers.Embedding(20000, 128, mask_zero=mask)(inputs)
    x = keras.layers.Bidirectional(keras.layers.LSTM(64))(x)
    model = keras.Model(inputs, keras.layers.Dense(1, activation="sigmoid")(x))
    model.compile("adam", "binary_crossentropy")
    rng = np.random.default_rng(0)
    tokens = rng.integers(1, 20000, (batch, length)).astype("int32")
    if mask:  # every other row right-padded by a quarter, as in a length bucket
        tokens[::2, length - length // 4:] = 0
    labels = rng.integers(0, 2, batch).astype("float32")
    data = tf.data.Dataset.from_tensors((tokens, labels)).repeat()
    model.fit(data, steps_per_epoch=2, shuffle=False, verbose=0)  # trace
    timings = []
    for _ in range(repeats):
        started = time.perf_counter()
        model.fit(data, steps_per_epoch=steps, shuffle=False, verbose=0)
        timings.append((time.perf_counter() - started) / steps)
    return min(timings)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lengths", type=int, nargs="+", default=[50, 100, 150, 200])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3, help="timings per cell; the fastest is reported")
    args = parser.parse_args()
    print(f"# {os.cpu_count()} CPUs · keras {keras.__version__} · batch {args.batch} · ms per training step")
    print(f"{'length':>6s} {'no mask':>9s} {'mask':>9s} {'mask / no mask':>15s}")
    for length in args.lengths:
        plain = step_seconds(False, length, args.batch, args.steps, args.repeats)
        masked = step_seconds(True, length, args.batch, args.steps, args.repeats)
        print(f"{length:6d} {plain * 1000:9.0f} {masked * 1000:9.0f} {masked / plain:15.2f}")


if __name__ == "__main__":
    main()
