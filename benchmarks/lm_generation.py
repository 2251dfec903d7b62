"""Generation speed of the `gpt` family for one stream, by context length: keras-hub's samplers over
`call_with_cache` (kpipe's export: keys and values of earlier positions kept, one position of work per token)
beside rerunning the whole causal model on the prefix for every token (the keras-io "GPT text generation from
scratch" recipe's loop).

The model has lm-bible's shape (2 blocks, 128 wide, 8,000 tokens) with random weights and a context of the
largest length asked (speed does not depend on what the weights learnt). For each context C the stream is
prompted with C - N tokens and writes N more (`--new-tokens`), greedy, so both methods do the same work per token
at the same positions; the cached and rerun methods alternate, each repeated (`--repeats`); the median and the
spread (min-max) of tokens/s are printed. Tracing is excluded (a first call per shape).

Usage: python benchmarks/lm_generation.py [--contexts 128 512 2048] [--new-tokens 32] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from kpipe.families.gpt.config import GPTConfig  # noqa: E402
from kpipe.families.gpt.model import build_gpt  # noqa: E402
from kpipe.preprocessing.byte_bpe import ByteBPE  # noqa: E402
from kpipe.tasks.lm.serving import LanguageModelServing  # noqa: E402


def synthetic_bpe(size: int) -> ByteBPE:
    """A vocabulary of `size` tokens learnt on random words (the tokenizer is not what is timed)."""
    rng = np.random.default_rng(0)
    letters = list("abcdefghijklmnopqrstuvwxyz")
    texts = [" ".join("".join(rng.choice(letters, rng.integers(2, 9))) for _ in range(40)) for _ in range(3000)]
    return ByteBPE.learn(texts, size)


def cached_rate(serving: LanguageModelServing, bpe: ByteBPE, prompt: str, new_tokens: int) -> float:
    """Tokens/s of the export's `generate`, counting the tokens it wrote (it stops early at an end-of-text)."""
    started = time.perf_counter()
    text = serving.generate(tf.constant([prompt]), tf.constant(new_tokens), tf.constant(0.0), tf.constant(0),
                            tf.constant(1.0), tf.constant(-1))["text"].numpy()[0]
    seconds = time.perf_counter() - started
    return max(1, len(bpe.encode([text.decode("utf-8", "replace")])[0])) / seconds


def rerun_seconds(forward, ids: list[int], new_tokens: int) -> float:
    """keras-io's loop: the whole prefix through the model for every new token, the argmax of its last position."""
    tokens = list(ids)
    started = time.perf_counter()
    for _ in range(new_tokens):
        x = tf.constant([tokens], tf.int32)
        logits = forward(x)
        tokens.append(int(tf.argmax(logits[0, -1])))
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--contexts", type=int, nargs="+", default=[128, 512, 2048])
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    keras.utils.set_random_seed(0)
    bpe = synthetic_bpe(8000)
    longest = max(args.contexts)
    model = build_gpt(GPTConfig(vocabulary_size=bpe.size, max_sequence_length=longest, num_layers=2, num_heads=4,
                                hidden_dim=128, intermediate_dim=512, dropout=0.0))
    serving = LanguageModelServing(model, bpe, longest)
    forward = tf.function(lambda x: model({"token_ids": x, "padding_mask": tf.ones_like(x, tf.bool)}),
                          reduce_retracing=True)
    rng = np.random.default_rng(1)
    print(f"# {os.cpu_count()} CPUs · tensorflow {tf.__version__} · gpt 2x128, vocabulary {bpe.size} · one stream, "
          f"greedy, {args.new_tokens} new tokens · tokens/s, median of {args.repeats} (min-max)")
    print(f"{'context':>7s} {'cached (kpipe)':>22s} {'rerun (keras-io)':>22s} {'cached / rerun':>15s}")
    for context in args.contexts:
        prompt_ids = [bpe.end_of_text] + rng.integers(1, bpe.size, context - args.new_tokens - 1).tolist()
        prompt = bpe.decode(prompt_ids[1:])
        # the prompt as text must tokenize to as many tokens (random ids can merge): trim to fit the context
        while len(bpe.encode([prompt])[0]) + 1 + args.new_tokens > context:
            prompt = prompt[:-8]
        ids = [bpe.end_of_text] + bpe.encode([prompt])[0]
        cached_rate(serving, bpe, prompt, args.new_tokens)  # traces this shape
        rerun_seconds(forward, ids, 2)
        timings = {"cached": [], "rerun": []}
        for repeat in range(args.repeats):
            order = ("cached", "rerun") if repeat % 2 == 0 else ("rerun", "cached")
            for method in order:
                timings[method].append(cached_rate(serving, bpe, prompt, args.new_tokens) if method == "cached"
                                       else args.new_tokens / rerun_seconds(forward, ids, args.new_tokens))

        def cell(values):
            return f"{statistics.median(values):8.1f} ({min(values):.0f}-{max(values):.0f})"

        ratio = statistics.median(timings["cached"]) / statistics.median(timings["rerun"])
        print(f"{context:7d} {cell(timings['cached']):>22s} {cell(timings['rerun']):>22s} {ratio:15.1f}")


if __name__ == "__main__":
    main()
