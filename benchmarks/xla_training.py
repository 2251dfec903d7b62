"""Training step time with and without XLA (`training.jit_compile = "on"` / `"off"`) on this machine.

Keras compiles training steps with XLA on GPUs but never on a machine with CPUs only (`jit_compile="auto"`);
kpipe's `training.jit_compile = "on"` asks for it anyway. This measures what that buys for one model shape:
lm-wikitext's `gpt` by default (2 blocks, width 256, 4 heads, feed-forward 1,024, 8,000 tokens, 32 x 128 tokens a
step, AdamW, dropout 0.1) on random tokens (the cost of a step does not depend on what it learns). Both models are
built and compiled first (their first steps, tracing and XLA's compilation, are not timed); then rounds of
`--steps` steps alternate between them (the order swaps every round), `--rounds` times, and the median, min and
max seconds per step are printed with the tokens per second of the median.

Usage: python benchmarks/xla_training.py [--attention softmax|linear] [--rounds 6] [--steps 20]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attention", default="softmax", choices=["softmax", "linear"])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--length", type=int, default=128)
    args = parser.parse_args()

    import keras
    import numpy as np
    import tensorflow as tf

    from kpipe.families.gpt.config import GPTConfig
    from kpipe.families.gpt.model import build_gpt

    vocabulary = 8000
    ids = np.random.default_rng(0).integers(1, vocabulary, size=(args.batch * 40, args.length + 1)).astype("int32")
    inputs = {"token_ids": ids[:, :-1], "padding_mask": np.ones((len(ids), args.length), bool)}
    data = tf.data.Dataset.from_tensor_slices((inputs, ids[:, 1:])).batch(args.batch).repeat().prefetch(4)

    def compiled(jit: bool) -> keras.Model:
        keras.utils.set_random_seed(1)
        model = build_gpt(GPTConfig(vocabulary_size=vocabulary, max_sequence_length=args.length, num_layers=2,
                                    num_heads=4, hidden_dim=256, intermediate_dim=1024, dropout=0.1,
                                    attention=args.attention))
        model.compile(optimizer=keras.optimizers.AdamW(1e-3), jit_compile=jit,
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        started = time.perf_counter()
        model.fit(data, steps_per_epoch=3, epochs=1, verbose=0)
        print(f"jit_compile={jit}: first 3 steps (tracing{', XLA compilation' if jit else ''}) "
              f"{time.perf_counter() - started:.1f} s", flush=True)
        return model

    models = {jit: compiled(jit) for jit in (False, True)}
    seconds: dict[bool, list[float]] = {False: [], True: []}
    for round_ in range(args.rounds):
        for jit in ((False, True) if round_ % 2 == 0 else (True, False)):
            started = time.perf_counter()
            models[jit].fit(data, steps_per_epoch=args.steps, epochs=1, verbose=0)
            seconds[jit].append((time.perf_counter() - started) / args.steps)
        print(f"round {round_ + 1}: " + ", ".join(f"jit_compile={jit} {seconds[jit][-1] * 1000:.0f} ms/step"
                                                   for jit in (False, True)), flush=True)
    tokens = args.batch * args.length
    for jit, per_step in seconds.items():
        median = statistics.median(per_step)
        print(f"{args.attention} attention, jit_compile={jit}: {median * 1000:.0f} ms/step (min "
              f"{min(per_step) * 1000:.0f}, max {max(per_step) * 1000:.0f}), {tokens / median:,.0f} tokens/s")
    print(f"XLA speed-up (median): {statistics.median(seconds[False]) / statistics.median(seconds[True]):.2f}x")


if __name__ == "__main__":
    main()
