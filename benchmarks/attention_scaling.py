"""Softmax vs linear, random-feature and FMM attention: training-step time and peak memory by sequence length.

For each length (default 256 … 4,096) and each attention, one transformer encoder layer as the classifier
builds it (hidden 64, 4 heads, feed-forward 128; each variant with its config defaults: elu + 1 features,
64 random features, band 8 + rank 2) on a batch of random embeddings with a padding mask: the median time of a
forward + backward pass (gradients of a sum of the outputs), over --repeats steps after two warm-up steps. The
attentions take turns at each length (the order rotated from one length to the next). The log-log slope of
time against length is fitted over the three longest lengths: about 2 for O(N²) attention, 1 for O(N).

With --memory, each (attention, length) also runs alone in a fresh process, which reports its peak resident
memory (VmHWM) minus its resident memory just before the first step: what the step needed at its peak, plus
the graph tracing (the same for every length). TensorFlow's CPU allocator reports no peak of its own.

Accuracy at 512 sub-words is not measured here: that is `kpipe run imdb-transformer --set model.attention=...`
(figures in benchmarks/README.md). Writes a log-log plot of time (and memory) vs length with --plot.

Usage: python benchmarks/attention_scaling.py [--lengths 256 512 1024 2048 4096] [--batch 4] [--memory]
           [--plot out.png]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

ATTENTIONS = ["softmax", "linear", "random_features", "fmm"]
HIDDEN, HEADS, INTERMEDIATE = 64, 4, 128


def encoder(attention: str):
    import keras_hub

    from kpipe.layers.attention_variants import VariantTransformerEncoder
    from kpipe.families.transformer_classifier.config import TransformerClassifierConfig

    if attention == "softmax":
        return keras_hub.layers.TransformerEncoder(INTERMEDIATE, HEADS)
    options = TransformerClassifierConfig(attention=attention).attention_options()  # the config's defaults
    return VariantTransformerEncoder(INTERMEDIATE, HEADS, attention, attention_options=options)


def batch_of(length: int, batch: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    x = tf.constant(rng.normal(size=(batch, length, HIDDEN)).astype("float32"))
    mask = np.ones((batch, length), bool)
    mask[1:, length * 3 // 4:] = False  # some padding, as in real batches
    return x, tf.constant(mask)


def resident_mb(field: str) -> float:
    """VmRSS (now) or VmHWM (peak) of this process, in MB."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"{field} not in /proc/self/status (Linux only)")


def peak_step_memory(attention: str, length: int, batch: int) -> float:
    """Run in a fresh process (--one): peak resident MB during three steps above the resident MB before them."""
    out = subprocess.run([sys.executable, __file__, "--one", attention, str(length), "--batch", str(batch)],
                         capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


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
    parser.add_argument("--attentions", nargs="+", default=ATTENTIONS, choices=ATTENTIONS)
    parser.add_argument("--memory", action="store_true", help="also measure each step's peak memory (subprocesses)")
    parser.add_argument("--plot", help="write a log-log plot of time vs length here")
    parser.add_argument("--one", nargs=2, metavar=("ATTENTION", "LENGTH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:  # a child of --memory: one attention at one length, alone in this process
        layer, (x, mask) = encoder(args.one[0]), batch_of(int(args.one[1]), args.batch)
        # Build the weights on 8 tokens (a full-length call would leave its activations resident before the
        # measurement starts); they are not the step's memory.
        layer(*batch_of(8, args.batch)[:1], padding_mask=batch_of(8, args.batch)[1])
        before = resident_mb("VmRSS")
        step_seconds(layer, x, mask, repeats=1)
        print(f"{resident_mb('VmHWM') - before:.1f}")
        return
    attentions = args.attentions
    layers = {name: encoder(name) for name in attentions}
    times: dict[str, list[float]] = {name: [] for name in attentions}
    memory: dict[str, list[float]] = {name: [] for name in attentions}
    print(f"# {os.cpu_count()} CPUs · one encoder layer, hidden {HIDDEN}, {HEADS} heads, feed-forward "
          f"{INTERMEDIATE}, batch {args.batch}; forward + backward, median of {args.repeats} steps")
    for i, length in enumerate(args.lengths):
        x, mask = batch_of(length, args.batch)
        order = attentions[i % len(attentions):] + attentions[:i % len(attentions)]
        for name in order:
            times[name].append(step_seconds(layers[name], x, mask, args.repeats))
            if args.memory:
                memory[name].append(peak_step_memory(name, length, args.batch))
        cells = "   ".join(f"{name} {times[name][-1] * 1000:8.1f} ms"
                           + (f" {memory[name][-1]:7.1f} MB" if args.memory else "") for name in attentions)
        ratios = "  ".join(f"softmax/{name} {times['softmax'][-1] / times[name][-1]:5.2f}x"
                           for name in attentions if name != "softmax" and "softmax" in times)
        print(f"length {length:5d}: {cells}   {ratios}", flush=True)
    longest = args.lengths[-3:]  # fixed costs flatten the short end: fit where the length dominates
    if len(longest) >= 2:
        for name in attentions:
            slope = np.polyfit(np.log(longest), np.log(times[name][-len(longest):]), 1)[0]
            line = f"{name}: log-log slope over lengths {', '.join(map(str, longest))}: time {slope:.2f}"
            if args.memory:
                line += f", memory {np.polyfit(np.log(longest), np.log(memory[name][-len(longest):]), 1)[0]:.2f}"
            print(line)
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        panels = [("forward + backward, ms", {n: [t * 1000 for t in times[n]] for n in attentions})]
        if args.memory:
            panels.append(("peak memory of a step, MB", memory))
        fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 4), squeeze=False)
        for ax, (label, values) in zip(axes[0], panels):
            for name in attentions:
                ax.loglog(args.lengths, values[name], "o-", label=name)
            ax.set_xticks(args.lengths, [str(n) for n in args.lengths])
            ax.minorticks_off()
            ax.set_xlabel("sequence length")
            ax.set_ylabel(label)
            ax.legend()
            ax.grid(True, which="both", alpha=0.3)
        fig.tight_layout()
        fig.savefig(args.plot, dpi=120)
        print(f"wrote {args.plot}")


if __name__ == "__main__":
    main()
