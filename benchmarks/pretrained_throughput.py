"""Fine-tuning throughput on the embedded tweets: kpipe's pretrained classifier (texts cut to each batch's
longest, batches grouped by length) against the keras-hub guide's recipe (`keras_hub.models.TextClassifier
.from_preset` with its preprocessor padding every text to a fixed `sequence_length`, kpipe's maximum), on the
same checkpoint, texts, batch size and optimizer (AdamW 5e-5). The two alternate, `--repeats` times each;
every measurement times `--steps` batches that follow a warm-up of `--warmup` batches in the same `fit`
(tracing, the input pipeline starting) and reports training samples per second. `--buckets` and `--precisions`
add kpipe ways (each count and precision its own way; the recipe stays float32). Until 2026-11-28 the timed
steps were a second `fit`, whose start made kpipe's input pipeline tokenize every text again before its
first batch: ~23 samples/s measured against ~47 in its steady state.

This is training speed only; both train the same encoder on the same data, so their accuracy after an epoch
is compared by running the pipeline (`kpipe run sentiment-minilm`), not here.

    python benchmarks/pretrained_throughput.py --preset /path/to/all-MiniLM-L6-v2 [--steps 60 --warmup 10 --repeats 3]
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def tweets(limit: int):
    from kpipe.tasks.named_pipelines import load_pipeline
    from kpipe.datasets.text_classification import load_text_classification

    splits = load_text_classification(load_pipeline("sentiment-minilm", [f"data.limit={limit}"]).data)
    return splits.train.texts, splits.train.labels


def optimizer(steps: int):
    from kpipe.config.training import TrainingConfig
    from kpipe.training.loop import make_optimizer

    return make_optimizer(TrainingConfig(optimizer="adamw", learning_rate=5e-5), 5e-5, steps=steps)


def kpipe_fit(preset: str, texts, labels, batch: int, length: int, steps: int, warmup: int, buckets: int = 4,
              precision: str = "float32") -> float:
    import keras

    from kpipe.families.pretrained_classifier.config import PretrainedClassifierConfig
    from kpipe.families.pretrained_classifier import model as classifier
    from kpipe.pretrained import inputs, presets
    from kpipe.preprocessing.buckets import quantile_boundaries
    from kpipe.training.precision import precision_scope

    preprocessor = presets.load_preprocessor(preset, length)
    boundaries = quantile_boundaries(inputs.token_lengths(texts, preprocessor), buckets, length)
    data = inputs.make_pretrained_dataset(texts, labels, preprocessor, batch_size=batch, shuffle=True,
                                          boundaries=boundaries).repeat()
    with precision_scope(precision):
        model = classifier.build_pretrained_classifier(PretrainedClassifierConfig(preset=preset, num_classes=3),
                                                       presets.load_backbone(preset))
    model.compile(optimizer(steps + warmup), keras.losses.SparseCategoricalCrossentropy(), jit_compile=False)
    return timed_fit(model, data, steps, warmup, batch)


def keras_hub_fit(preset: str, texts, labels, batch: int, length: int, steps: int, warmup: int) -> float:
    import keras
    import keras_hub
    import tensorflow as tf

    preprocessor = keras_hub.models.TextClassifierPreprocessor.from_preset(preset, sequence_length=length)
    model = keras_hub.models.TextClassifier.from_preset(preset, num_classes=3, preprocessor=None)
    data = (tf.data.Dataset.from_tensor_slices((list(texts), labels)).shuffle(len(labels), seed=0).batch(batch)
            .map(lambda x, y: (preprocessor(x), y), num_parallel_calls=tf.data.AUTOTUNE).cache().repeat()
            .prefetch(tf.data.AUTOTUNE))
    model.compile(optimizer(steps + warmup), keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  jit_compile=False)
    return timed_fit(model, data, steps, warmup, batch)


def timed_fit(model, data, steps: int, warmup: int, batch: int) -> float:
    """Training samples per second over `steps` batches that follow `warmup` batches in the same `fit`: the
    input pipeline is running and the training step traced by then. (Timing a second `fit` instead would
    count kpipe's new iterator filling its shuffle buffer, which tokenizes every text again: its cache is
    only kept after a whole pass. A real run pays that once, at its first epoch.)"""
    import keras

    times = {}

    class Clock(keras.callbacks.Callback):
        def on_train_batch_end(self, index, logs=None):
            if index in (warmup - 1, warmup + steps - 1):
                times[index] = time.perf_counter()

    model.fit(data, steps_per_epoch=warmup + steps, epochs=1, verbose=0, callbacks=[Clock()])
    return steps * batch / (times[warmup + steps - 1] - times[warmup - 1])


def measure(preset: str, limit: int, batch: int, length: int, steps: int, repeats: int, warmup: int = 10,
            buckets: tuple[int, ...] = (4,), precisions: tuple[str, ...] = ("float32",)) -> dict[str, list[float]]:
    """Samples/s of each way, `repeats` measurements each, the order alternating: {way: [rates]}, kpipe's ways
    first (one per bucket count and precision), the keras-hub recipe (float32) last."""
    texts, labels = tweets(limit)
    ways = {f"kpipe ({n} length buckets, {precision})": functools.partial(kpipe_fit, buckets=n, precision=precision)
            for n in buckets for precision in precisions}
    ways[f"keras-hub recipe (padded to {length}, float32)"] = keras_hub_fit
    rates = {name: [] for name in ways}
    for repeat in range(repeats):
        for name in (list(ways) if repeat % 2 == 0 else list(reversed(ways))):
            rates[name].append(ways[name](preset, texts, labels, batch, length, steps, warmup))
            print(f"{name}: {rates[name][-1]:.1f} samples/s", flush=True)
    return rates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", required=True, help="a keras-hub preset or checkpoint folder")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--length", type=int, default=64, help="kpipe's maximum word pieces (sentiment-minilm: 64)")
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--warmup", type=int, default=10, help="batches trained before each measurement")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--limit", type=int, default=4000, help="tweets to draw the batches from")
    parser.add_argument("--buckets", type=int, nargs="+", default=[4],
                        help="kpipe's length-bucket counts to time, each a way of its own (sentiment-minilm: 4)")
    parser.add_argument("--precisions", nargs="+", default=["float32"], choices=["float32", "mixed_bfloat16"],
                        help="kpipe's precisions to time, each a way of its own (the recipe stays float32)")
    args = parser.parse_args()
    rates = measure(args.preset, args.limit, args.batch, args.length, args.steps, args.repeats, args.warmup,
                    tuple(args.buckets), tuple(args.precisions))
    print(f"\nbatch {args.batch}, {args.steps} steps per measurement after {args.warmup}, {args.repeats} "
          "measurements each, alternating")
    for name, values in rates.items():
        print(f"{name:45s} median {statistics.median(values):6.1f} samples/s (min {min(values):.1f}, "
              f"max {max(values):.1f})")
    recipe = statistics.median(rates[list(rates)[-1]])
    for name, values in list(rates.items())[:-1]:
        print(f"{name} trains {statistics.median(values) / recipe:.2f}x as many samples per second as the recipe")


if __name__ == "__main__":
    main()
