"""Training-step time of a pretrained encoder in float32 and in mixed_bfloat16, on this machine's CPU.

Decides `training.precision` for the pretrained pipelines: bfloat16 only where it is measured faster.
The two precisions alternate, each timed `--repeats` times over `--steps` steps of one fixed batch
(batch 32 of tweet-length texts by default), after a warm-up step; median and spread are printed.

    python benchmarks/pretrained_precision.py --preset /path/to/all-MiniLM-L6-v2 [--tokens 40]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def step_seconds(preset: str, precision: str, batch: int, tokens: int, steps: int) -> float:
    import numpy as np

    from kpipe.config.training import TrainingConfig
    from kpipe.families.pretrained_classifier.config import PretrainedClassifierConfig
    from kpipe.families.pretrained_classifier import model as classifier
    from kpipe.pretrained import presets
    from kpipe.training.loop import make_optimizer
    from kpipe.training.precision import precision_scope

    with precision_scope(precision):
        model = classifier.build_pretrained_classifier(PretrainedClassifierConfig(preset=preset, num_classes=3),
                                                       presets.load_backbone(preset))
    model.compile(make_optimizer(TrainingConfig(optimizer="adamw", learning_rate=5e-5), 5e-5, steps=100),
                  "sparse_categorical_crossentropy")
    rng = np.random.default_rng(0)
    x = {"token_ids": rng.integers(1000, 20000, (batch, tokens)).astype("int32"),
         "padding_mask": np.ones((batch, tokens), "int32"), "segment_ids": np.zeros((batch, tokens), "int32")}
    y = rng.integers(0, 3, batch)
    model.train_on_batch(x, y)  # trace and warm up
    started = time.perf_counter()
    for _ in range(steps):
        model.train_on_batch(x, y)
    return (time.perf_counter() - started) / steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", required=True, help="a keras-hub preset or checkpoint folder")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--tokens", type=int, default=40, help="tokens per text (tweets: median 33 word pieces)")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    times = {"float32": [], "mixed_bfloat16": []}
    for repeat in range(args.repeats):
        order = list(times) if repeat % 2 == 0 else list(reversed(times))  # alternate which goes first
        for precision in order:
            times[precision].append(step_seconds(args.preset, precision, args.batch, args.tokens, args.steps))
    for precision, values in times.items():
        print(f"{precision:15s} median {1000 * statistics.median(values):7.1f} ms/step  "
              f"(min {1000 * min(values):.1f}, max {1000 * max(values):.1f}; {args.repeats} x {args.steps} steps, "
              f"batch {args.batch} x {args.tokens} tokens)")
    ratio = statistics.median(times["float32"]) / statistics.median(times["mixed_bfloat16"])
    print(f"mixed_bfloat16 is {ratio:.2f}x the speed of float32")


if __name__ == "__main__":
    main()
