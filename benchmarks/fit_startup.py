"""Seconds from `train_model` to the end of a short fit, with the optimizer and metrics built before the
first trace (kpipe's `_build_training_state`) against Keras' own deferred build (the reference).

Keras 3.15 creates the optimizer's and the compiled metrics' variables inside the first trace of the
train step when no distribution strategy is set; a tf.function that creates variables is then traced a
second time (tensorflow#48851). Building them first should save one trace of the step per fit: a fixed
cost, so it shows on small runs (tests, tuning trials, quick runs) and vanishes on long ones.

The two ways alternate, `--repeats` times each, every run on a new model (new tf.functions, so each
pays its own tracing) after one warm-up run; medians and spreads are printed, with the traces counted.

    python benchmarks/fit_startup.py [--repeats 5] [--examples 320] [--units 8]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--examples", type=int, default=320, help="token sequences of 3-30 tokens, 3 classes")
    parser.add_argument("--units", type=int, default=8, help="BiLSTM units")
    args = parser.parse_args()

    import numpy as np
    import tensorflow as tf
    from keras.src.backend.tensorflow.trainer import TensorFlowTrainer

    from kpipe.config.training import TrainingConfig
    from kpipe.families.rnn_classifier.config import RNNClassifierConfig
    from kpipe.families.rnn_classifier.model import build_rnn_classifier
    from kpipe.training import loop

    rng = np.random.default_rng(0)
    rows = [rng.integers(1, 500, size=rng.integers(3, 31)).astype("int32") for _ in range(args.examples)]
    labels = rng.integers(0, 3, args.examples)
    data = (tf.data.Dataset.from_generator(lambda: zip(rows, labels), output_signature=(
        tf.TensorSpec([None], tf.int32), tf.TensorSpec([], tf.int64)))
        .bucket_by_sequence_length(lambda x, y: tf.shape(x)[0], [10, 20], [32, 32, 32]).cache())
    config = TrainingConfig(epochs=1, early_stopping_patience=0)
    model_config = RNNClassifierConfig(vocabulary_size=500, num_classes=3, embedding_dim=16, units=(args.units,))
    traces = []
    train_step = TensorFlowTrainer.train_step
    TensorFlowTrainer.train_step = lambda self, batch: traces.append(1) or train_step(self, batch)
    prebuild = loop._build_training_state

    def fit(way: str) -> tuple[float, int]:
        loop._build_training_state = prebuild if way == "kpipe" else (lambda model, train_data: None)
        traces.clear()
        with tempfile.TemporaryDirectory() as work:
            started = time.perf_counter()
            loop.train_model(lambda: build_rnn_classifier(model_config), loss="sparse_categorical_crossentropy",
                             metrics=["accuracy"], train_data=data, validation_data=data, config=config,
                             work_dir=Path(work), strategy=loop.make_strategy("default"))
            return time.perf_counter() - started, len(traces)

    fit("kpipe")  # warm-up: imports, the dataset's cache, TensorFlow's one-time set-up
    seconds = {"kpipe": [], "keras": []}
    counted = {}
    for repeat in range(args.repeats):
        for way in (("kpipe", "keras") if repeat % 2 == 0 else ("keras", "kpipe")):
            elapsed, counted[way] = fit(way)
            seconds[way].append(elapsed)
    print(f"One epoch of a BiLSTM ({args.units} units) on {args.examples} bucketed sequences, "
          f"{args.repeats} runs each, alternating:")
    for way, label in (("kpipe", "built before the first trace (kpipe)"), ("keras", "Keras' deferred build")):
        runs = seconds[way]
        print(f"  {label:40s} median {statistics.median(runs):5.2f} s  (min {min(runs):.2f}, max {max(runs):.2f})"
              f"  train-step traces: {counted[way]}")
    saved = statistics.median(seconds["keras"]) - statistics.median(seconds["kpipe"])
    print(f"  saved per fit: {saved:.2f} s by the medians")


if __name__ == "__main__":
    main()
