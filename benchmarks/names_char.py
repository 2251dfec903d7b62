"""Name generators: held-out NLL vs a character bigram, and batched sampling vs the tutorial loop, one run.

1. Trains each --pipeline (default: names-char; add names-transformer to compare the causal transformer), or
   takes existing exports with --model (repeatable), and prints every model's test NLL per character beside
   the bigram model's (fitted on the same training names, scored on the same test names: the pipelines share
   the data split). Target: the RNN's NLL at least 15 % below the bigram's.
2. Sampling speed on the same trained model, same machine:
     batched   the export's `generate` signature: --count names in one call (one tf.while_loop)
     tutorial  the usual loop: one Keras model call per character per name, on the growing sequence,
               names one after another, in Python
   Target: batched ≥ 50× more names per second.

Usage: python benchmarks/names_char.py [--pipeline names-char --pipeline names-transformer]
           [--model saved_models/names-char/1 ...] [--count 1000] [--loop-names 30]
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", action="append", default=[], help="an existing export (repeatable)")
    parser.add_argument("--pipeline", action="append", default=[],
                        help="a pipeline to train now (repeatable; default names-char when no --model)")
    parser.add_argument("--set", action="append", default=[], help="overrides when training, e.g. training.epochs=5")
    parser.add_argument("--count", type=int, default=1000, help="names per batched call")
    parser.add_argument("--loop-names", type=int, default=30, help="names sampled by the tutorial loop")
    args = parser.parse_args()

    from kpipe.tasks.named_pipelines import load_pipeline

    from kpipe.tasks.runner import run_pipeline

    exports = list(args.model)
    for name in args.pipeline or ([] if exports else ["names-char"]):
        started = time.perf_counter()
        exports.append(str(run_pipeline(load_pipeline(name, args.set)).export_dir))
        print(f"{name}: trained in {time.perf_counter() - started:.0f} s -> {exports[-1]}", flush=True)
    for export in exports:
        measure(export, args)


def measure(export: str, args) -> None:
    """Print one export's test NLL beside the bigram's, and its sampling speed beside the tutorial loop."""
    import keras
    import tensorflow as tf

    import kpipe.families.char_rnn.model  # noqa: F401  (registers the custom layers for model.keras)
    import kpipe.families.char_transformer.model  # noqa: F401
    from kpipe.families.char_sampling import END, START

    metrics = json.load(open(os.path.join(export, "metrics.json")))
    spec = json.load(open(os.path.join(export, "generator.json")))

    # === 1. Likelihood ===
    print(f"\n## {metrics['pipeline']} ({export})")
    print(f"# {os.cpu_count()} CPUs · {metrics['data']['train']:,} training / {metrics['data']['test']:,} test "
          f"(name, country) examples · {metrics['epochs_trained']} epochs, {metrics['train_seconds_this_run']:.0f} s")
    print(f"{'test NLL per character (nats)':34s} {'model':>8s} {'bigram':>8s}")
    print(f"{'':34s} {metrics['test_nll_per_char']:8.4f} {metrics['bigram_nll_per_char']:8.4f}   "
          f"model {100 * metrics['nll_reduction_vs_bigram']:.1f}% lower (target ≥ 15%)")
    print(f"{'perplexity':34s} {metrics['test_perplexity']:8.2f} {metrics['bigram_perplexity']:8.2f}")

    # === 2. Sampling speed ===
    loaded = tf.saved_model.load(export)
    category = spec["categories"][0] if spec["categories"] else ""

    def batched(seed):
        return loaded.generate(prefix=tf.constant(""), count=tf.constant(args.count), temperature=tf.constant(1.0),
                               category=tf.constant(category), top_k=tf.constant(0), seed=tf.constant(seed))

    batched(0)  # trace once
    timings = []
    for seed in range(1, 4):
        started = time.perf_counter()
        batched(seed)["names"].numpy()
        timings.append(time.perf_counter() - started)
    batched_rate = args.count / min(timings)

    model = keras.saving.load_model(os.path.join(export, "model.keras"))
    category_id = np.array([spec["categories"].index(category) if category else 0], "int32")
    rng = np.random.default_rng(0)
    model([np.array([[START]], "int32"), category_id])  # warm up
    started = time.perf_counter()
    for _ in range(args.loop_names):
        sequence = [START]
        for _ in range(spec["max_length"]):
            logits = model([np.array([sequence], "int32"), category_id]).numpy()[0, -1]
            logits[[0, 1, 3]] = -np.inf
            probabilities = np.exp(logits - logits.max())
            nxt = int(rng.choice(len(probabilities), p=probabilities / probabilities.sum()))
            if nxt == END:
                break
            sequence.append(nxt)
    loop_rate = args.loop_names / (time.perf_counter() - started)
    print(f"\n{'sampling (temperature 1.0)':34s} {'names/s':>10s}")
    print(f"{'tutorial loop (1 call per char)':34s} {loop_rate:10.1f}   ({args.loop_names} names)")
    print(f"{'kpipe batched generate':34s} {batched_rate:10.1f}   ({args.count} names per call, best of 3)   "
          f"{batched_rate / loop_rate:.0f}x (target ≥ 50x)")


if __name__ == "__main__":
    main()
