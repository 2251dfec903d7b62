"""Softmax vs linear attention: training-step time by sequence length, same encoder size and batch, one run.

For each length (default 256 … 4,096) and each attention, one transformer encoder layer as the classifier
builds it (hidden 64, 4 heads, feed-forward 128) on a batch of random embeddings with a padding mask: the
median time of a forward + backward pass (gradients of a sum of the outputs), over --repeats steps after two
warm-up steps. The attentions take turns at each length (their order reversed every other length). The
log-log slope of time against length is fitted over the three longest lengths: about 2 for O(N²) attention, 1 for
O(N). Writes attention_scaling.png (log-log) with --plot.

What it does not measure yet: peak memory (TensorFlow's CPU allocator does not report it) and accuracy on IMDB
at 512 sub-words (that needs an imdb-transformer run per attention; the switch is model.attention).

Usage: python benchmarks/attention_scaling.py [--lengths 256 512 1024 2048 4096] [--batch 4] [--plot out.png]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402


def encoder(attention: str, hidden: int, heads: int, intermediate: int):
    import keras_hub

    from kpipe.models.linear_attention import LinearTransformerEncoder

    if attention == "linear":
        return LinearTransformerEncoder(intermediate, heads)
    return keras_hub.layers.TransformerEncoder(intermediate, heads)


def step_seconds(layer, x, mask, repeats: int) -> float:
    @tf.function
    def step(x, mask):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(layer(x, padding_mask=mask, training=True))
        return tape.gradient(loss, layer.trainable_variables)

    for _ in range(2):
        step(x, mask)
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        [g.numpy() for g in step(x, mask)]
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[256, 512, 1024, 2048, 4096])
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--plot", help="write a log-log plot of time vs length here")
    args = parser.parse_args()
    hidden, heads, intermediate = 64, 4, 128
    attentions = ["softmax", "linear"]
    layers = {name: encoder(name, hidden, heads, intermediate) for name in attentions}
    rng = np.random.default_rng(0)
    times: dict[str, list[float]] = {name: [] for name in attentions}
    print(f"# {os.cpu_count()} CPUs · one encoder layer, hidden {hidden}, {heads} heads, feed-forward "
          f"{intermediate}, batch {args.batch}; forward + backward, median of {args.repeats} steps")
    for i, length in enumerate(args.lengths):
        x = tf.constant(rng.normal(size=(args.batch, length, hidden)).astype("float32"))
        mask = np.ones((args.batch, length), bool)
        mask[1:, length * 3 // 4:] = False  # some padding, as in real batches
        mask = tf.constant(mask)
        for name in attentions if i % 2 == 0 else reversed(attentions):
            times[name].append(step_seconds(layers[name], x, mask, args.repeats))
        soft, linear = times["softmax"][-1], times["linear"][-1]
        print(f"length {length:5d}: softmax {soft * 1000:9.1f} ms   linear {linear * 1000:8.1f} ms   "
              f"softmax / linear {soft / linear:5.2f}x", flush=True)
    longest = args.lengths[-3:]  # fixed costs flatten the short end: fit where the length dominates
    if len(longest) >= 2:
        for name in attentions:
            slope = np.polyfit(np.log(longest), np.log(times[name][-len(longest):]), 1)[0]
            print(f"{name}: log-log slope over lengths {', '.join(map(str, longest))}: {slope:.2f}")
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(5, 4))
        for name in attentions:
            ax.loglog(args.lengths, [t * 1000 for t in times[name]], "o-", label=name)
        ax.set_xticks(args.lengths, [str(n) for n in args.lengths])
        ax.minorticks_off()
        ax.set_xlabel("sequence length")
        ax.set_ylabel("forward + backward, ms")
        ax.legend()
        ax.grid(True, which="both", alpha=0.3)
        fig.tight_layout()
        fig.savefig(args.plot, dpi=120)
        print(f"wrote {args.plot}")


if __name__ == "__main__":
    main()
