"""kpipe's imdb-bilstm input pipeline vs a plain Keras reference: same BiLSTM, same data, one run.

Reference: the keras-io recipe — integer sequences padded/truncated to 200 with `pad_sequences`
defaults (padding="pre", truncating="pre"), NumPy arrays straight into `model.fit`, no tf.data,
no masking. kpipe: the pieces `kpipe run imdb-bilstm` uses (its tf.data pipeline with a cache
and length buckets, post-padding with masks, `build_rnn_classifier`), configured by the
`imdb-bilstm` pipeline. Optionally a third run: kpipe without length buckets.

Both models: Embedding(20000, 128) -> Bidirectional(LSTM(64, dropout=0.3)) -> Dropout(0.3) ->
Dense(1, sigmoid), Adam 1e-3, batch 64, on the same train/validation/test split of the IMDB training CSV:
the same layers and dropout on both sides (the pipeline's `model` section).

This machine's speed drifts under sustained load (the same epoch can take 60 s or 85 s minutes
apart), so the runs take turns epoch by epoch, and the order alternates (kpipe first in odd epochs,
the reference first in even ones). Throughput is training examples per second of epoch wall time,
validation included; epoch 1 also includes tracing and kpipe's tokenizing into its tf.data cache
(the reference tokenizes and pads before its timed epochs), so the summary is the median (and
range) over the later epochs, and the ratio of those medians.

Usage (from the repository root):
    python benchmarks/imdb_bilstm_throughput.py --csv ../shared/data/imdb/train.csv.gz --epochs 5
    python benchmarks/imdb_bilstm_throughput.py --limit 5000 --epochs 3     # a quick look
    python benchmarks/imdb_bilstm_throughput.py --set preprocessing.length_buckets=16   # a kpipe variant
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import time
import warnings

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402

from kpipe.datasets.text_classification import load_text_classification  # noqa: E402
from kpipe.families.rnn_classifier.model import build_rnn_classifier  # noqa: E402
from kpipe.tasks.named_pipelines import load_pipeline  # noqa: E402
from kpipe.preprocessing.text import (bucket_boundaries, fit_vocabulary, make_text_dataset,  # noqa: E402
                                      make_vectorizer, token_lengths)

warnings.filterwarnings("ignore", message="Your input ran out of data")  # unknown-size tf.data epochs


def compiled(model, config, steps_per_execution: int = 1):
    model.compile(optimizer=keras.optimizers.Adam(config.training.learning_rate), loss="binary_crossentropy",
                  metrics=["accuracy"], steps_per_execution=steps_per_execution)
    return model


def kpipe_setup(splits, config, vocabulary, buckets: bool):
    """kpipe's datasets and model, as run_classify makes them."""
    pre = config.preprocessing if buckets else dataclasses.replace(config.preprocessing, length_buckets=0)
    vectorizer = make_vectorizer(pre, vocabulary)
    boundaries = bucket_boundaries(token_lengths(splits.train.texts, vectorizer), pre)
    batch = config.training.batch_size

    def dataset(part, **kw):
        return make_text_dataset(part.texts, part.labels, vectorizer, pre, batch_size=batch, **kw)

    keras.utils.set_random_seed(config.training.seed)
    model_config = dataclasses.replace(config.model, vocabulary_size=len(vocabulary), num_classes=2)
    model = compiled(build_rnn_classifier(model_config), config, config.training.steps_per_execution)
    train = dataset(splits.train, shuffle=True, seed=config.training.seed, boundaries=boundaries)
    return model, train, dataset(splits.validation, boundaries=boundaries), dataset(splits.test)


def reference_setup(splits, config, vocabulary):
    """The keras-io recipe: pad_sequences(maxlen) defaults, NumPy arrays into fit, no mask."""
    pre = config.preprocessing
    vectorizer = make_vectorizer(pre, vocabulary)

    def to_array(texts):
        ids = [vectorizer(np.array([t], dtype=object)).to_list()[0] for t in texts]
        return keras.utils.pad_sequences(ids, maxlen=pre.sequence_length)  # padding="pre", truncating="pre"

    keras.utils.set_random_seed(config.training.seed)
    inputs = keras.Input((None,), dtype="int32")
    x = keras.layers.Embedding(len(vocabulary), config.model.embedding_dim)(inputs)
    x = keras.layers.Bidirectional(keras.layers.LSTM(config.model.units[0], dropout=config.model.dropout))(x)
    if config.model.dropout:
        x = keras.layers.Dropout(config.model.dropout)(x)
    model = compiled(keras.Model(inputs, keras.layers.Dense(1, activation="sigmoid")(x)), config)
    arrays = [(to_array(s.texts), s.labels) for s in (splits.train, splits.validation, splits.test)]
    return model, *arrays


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--csv", default="../shared/data/imdb/train.csv.gz", help="IMDB CSV with text,label")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--limit", type=int, default=0, help="use a random sample of this many reviews (0 = all)")
    parser.add_argument("--without-buckets", action="store_true",
                        help="also run kpipe with preprocessing.length_buckets=0 (each batch padded to its longest)")
    parser.add_argument("--set", action="append", default=[], help="an override of kpipe's imdb-bilstm config")
    parser.add_argument("--json", help="also write the figures to this JSON file")
    args = parser.parse_args()

    # The keras-io recipe's model on both sides: 200 words, the final BiLSTM state (the pipeline's defaults read
    # 400 words and pool every step's outputs, a different model).
    recipe = ["preprocessing.sequence_length=200", 'model.pooling="last"']
    config = load_pipeline("imdb-bilstm", ["data.source=file", f'data.path="{args.csv}"', f"data.limit={args.limit}",
                                           *recipe, *args.set])
    splits = load_text_classification(config.data)
    vocabulary = fit_vocabulary(splits.train.texts, config.preprocessing)
    n_train, batch = len(splits.train), config.training.batch_size
    print(f"# {os.cpu_count()} CPUs · keras {keras.__version__} · {n_train} train / {len(splits.validation)} val / "
          f"{len(splits.test)} test reviews · {args.epochs} epochs · batch {batch}")

    runs = {"kpipe imdb-bilstm": kpipe_setup(splits, config, vocabulary, buckets=True)}
    if args.without_buckets:
        runs["kpipe, no length buckets"] = kpipe_setup(splits, config, vocabulary, buckets=False)
    ref_model, ref_train, ref_val, ref_test = reference_setup(splits, config, vocabulary)

    def fit_epoch(name, epoch):
        started = time.perf_counter()
        if name in runs:
            model, train, val, _ = runs[name]
            logs = model.fit(train, validation_data=val, initial_epoch=epoch, epochs=epoch + 1, verbose=0).history
        else:
            logs = ref_model.fit(*ref_train, validation_data=ref_val, batch_size=batch, initial_epoch=epoch,
                                 epochs=epoch + 1, verbose=0).history
        return time.perf_counter() - started, logs["val_accuracy"][-1]

    names = [*runs, "reference (pad 200, numpy)"]
    results = {name: {"epoch_seconds": [], "val_accuracy": []} for name in names}
    for epoch in range(args.epochs):
        for name in (names if epoch % 2 == 0 else names[::-1]):
            seconds, val_accuracy = fit_epoch(name, epoch)
            results[name]["epoch_seconds"].append(seconds)
            results[name]["val_accuracy"].append(val_accuracy)
            print(f"epoch {epoch + 1} {name:28s} {seconds:6.1f} s  val_accuracy {val_accuracy:.4f}", flush=True)
    for name in runs:
        results[name]["test_accuracy"] = runs[name][0].evaluate(runs[name][3], verbose=0)[1]
    results[names[-1]]["test_accuracy"] = ref_model.evaluate(*ref_test, batch_size=256, verbose=0)[1]

    print(f"\n{'':28s} {'samples/s':>10s} {'samples/s, later epochs':>24s} {'val acc':>8s} {'test acc':>9s}")
    print(f"{'':28s} {'epoch 1':>10s} {'median (range)':>24s} {'(last)':>8s}")
    for name, r in results.items():
        r["samples_per_second"] = [n_train / s for s in r["epoch_seconds"]]
        later = r["samples_per_second"][1:] or [float("nan")]
        r["later_median"] = float(np.median(later))
        spread = f"{r['later_median']:.1f} ({min(later):.1f}–{max(later):.1f})"
        print(f"{name:28s} {r['samples_per_second'][0]:10.1f} {spread:>24s} "
              f"{r['val_accuracy'][-1]:8.4f} {r['test_accuracy']:9.4f}")
    kp, ref = results[names[0]], results[names[-1]]
    ratios = [a / b for a, b in zip(kp["samples_per_second"], ref["samples_per_second"])]
    print(f"\nthroughput kpipe / reference: {kp['later_median'] / ref['later_median']:.2f}x (medians of epochs 2+; "
          f"target ≥ 1.5x at equal or better accuracy); by epoch: {', '.join(f'{r:.2f}x' for r in ratios)}")
    print(f"test accuracy kpipe - reference: {kp['test_accuracy'] - ref['test_accuracy']:+.4f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"train_examples": n_train, "epochs": args.epochs, "ratios": ratios, "runs": results}, f,
                      indent=2)


if __name__ == "__main__":
    main()
