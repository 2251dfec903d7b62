"""kpipe's imdb-bilstm pipeline vs a plain Keras reference, same BiLSTM, same data, same machine, one run.

Reference: the keras-io recipe — integer sequences padded/truncated to 200 with `pad_sequences`
defaults (padding="pre", truncating="pre"), NumPy arrays straight into `model.fit`, no tf.data,
no masking. kpipe: the `imdb-bilstm` pipeline as a user runs it (tf.data, length buckets,
post-padding with masks), export included but not timed.

Both models: Embedding(20000, 128) -> Bidirectional(LSTM(64)) -> Dense(1, sigmoid), Adam 1e-3,
batch 64, the same train/validation/test split of the IMDB training CSV. Throughput is training
examples per second of epoch wall time (validation included for both).

Usage (from the repository root):
    python benchmarks/imdb_bilstm_throughput.py --csv ../shared/data/imdb/train.csv.gz --epochs 2
    python benchmarks/imdb_bilstm_throughput.py --limit 5000 --epochs 1     # a quick look
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402

from kpipe.datasets.text_classification import load_text_classification  # noqa: E402
from kpipe.pipelines import load_pipeline, run_pipeline  # noqa: E402
from kpipe.preprocessing.text import fit_vocabulary, make_vectorizer  # noqa: E402
from kpipe.training import EpochTimer  # noqa: E402


def reference_run(splits, config, epochs: int) -> dict:
    """The keras-io recipe on the same split: pad_sequences(maxlen) defaults, NumPy into fit."""
    pre = config.preprocessing
    vectorizer = make_vectorizer(pre, fit_vocabulary(splits.train.texts, pre))

    def to_array(texts):
        ids = [vectorizer(np.array([t], dtype=object)).to_list()[0] for t in texts]
        return keras.utils.pad_sequences(ids, maxlen=pre.sequence_length)  # padding="pre", truncating="pre"

    x_train, x_val, x_test = (to_array(s.texts) for s in (splits.train, splits.validation, splits.test))
    keras.utils.set_random_seed(config.training.seed)
    inputs = keras.Input((None,), dtype="int32")
    x = keras.layers.Embedding(pre.vocabulary_size, config.model.embedding_dim)(inputs)
    x = keras.layers.Bidirectional(keras.layers.LSTM(config.model.units[0]))(x)
    if config.model.dropout:
        x = keras.layers.Dropout(config.model.dropout)(x)
    model = keras.Model(inputs, keras.layers.Dense(1, activation="sigmoid")(x))
    model.compile(optimizer=keras.optimizers.Adam(config.training.learning_rate), loss="binary_crossentropy",
                  metrics=["accuracy"])
    timer_logs = []
    record = keras.callbacks.LambdaCallback(on_epoch_end=lambda e, logs: timer_logs.append(dict(logs)))
    model.fit(x_train, splits.train.labels, batch_size=config.training.batch_size, epochs=epochs,
              validation_data=(x_val, splits.validation.labels), callbacks=[EpochTimer(), record], verbose=2)
    test_accuracy = model.evaluate(x_test, splits.test.labels, batch_size=256, verbose=0)[1]
    return {"epoch_seconds": [h["epoch_seconds"] for h in timer_logs],
            "val_accuracy": [h["val_accuracy"] for h in timer_logs], "test_accuracy": float(test_accuracy)}


def kpipe_run(config) -> dict:
    with tempfile.TemporaryDirectory() as export_dir:
        config = dataclasses.replace(config, export=dataclasses.replace(config.export, dir=export_dir))
        metrics = run_pipeline(config).metrics
    return {"epoch_seconds": [h["epoch_seconds"] for h in metrics["history"]],
            "val_accuracy": [h["val_accuracy"] for h in metrics["history"]], "test_accuracy": metrics["accuracy"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--csv", default="../shared/data/imdb/train.csv.gz", help="IMDB CSV with text,label")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--limit", type=int, default=0, help="use a random sample of this many reviews (0 = all)")
    parser.add_argument("--set", action="append", default=[], help="extra kpipe overrides, e.g. preprocessing.length_buckets=0")
    parser.add_argument("--json", help="also write the figures to this JSON file")
    args = parser.parse_args()

    overrides = [f"data.source=file", f'data.path="{args.csv}"', f"data.limit={args.limit}",
                 f"training.epochs={args.epochs}", "training.early_stopping_patience=0", *args.set]
    config = load_pipeline("imdb-bilstm", overrides)
    splits = load_text_classification(config.data)
    n_train = len(splits.train)

    print(f"# {platform.node()} · {os.cpu_count()} CPUs · keras {keras.__version__} · "
          f"{n_train} train / {len(splits.validation)} val / {len(splits.test)} test reviews · {args.epochs} epoch(s)")
    started = time.perf_counter()
    kp = kpipe_run(config)
    ref = reference_run(splits, config, args.epochs)
    rows = {"kpipe imdb-bilstm": kp, "reference (pad 200, numpy)": ref}
    print(f"\n{'':28s} {'samples/s':>10s} {'epoch s':>9s} {'val acc':>8s} {'test acc':>9s}")
    for name, r in rows.items():
        r["samples_per_second"] = n_train / float(np.mean(r["epoch_seconds"]))
        print(f"{name:28s} {r['samples_per_second']:10.1f} {np.mean(r['epoch_seconds']):9.1f} "
              f"{r['val_accuracy'][-1]:8.4f} {r['test_accuracy']:9.4f}")
    ratio = kp["samples_per_second"] / ref["samples_per_second"]
    print(f"\nthroughput ratio kpipe / reference: {ratio:.2f}x  (target ≥ 1.5x at equal or better accuracy)")
    print(f"accuracy difference (val, last epoch): {kp['val_accuracy'][-1] - ref['val_accuracy'][-1]:+.4f}")
    print(f"total wall time {time.perf_counter() - started:.0f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"train_examples": n_train, "epochs": args.epochs, "ratio": ratio, **rows}, f, indent=2)


if __name__ == "__main__":
    main()
