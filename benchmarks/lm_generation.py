"""Generation speed of the `gpt` family for one stream, by context length, three ways:

- cached: softmax attention through keras-hub's samplers over `call_with_cache` (kpipe's export: keys and values
  of earlier positions kept, one position of work per token, attending over a cache that grows with the text);
- linear: `model.attention = "linear"` through its recurrent form (kpipe's export: each block's running sums, a
  state whose size does not depend on the text's length: the notes' "Transformers are RNNs");
- rerun: softmax attention rerunning the whole causal model on the prefix for every token (the keras-io "GPT text
  generation from scratch" recipe's loop).

The models have lm-bible's shape (2 blocks, 128 wide, 8,000 tokens) with random weights and a context of the
largest length asked (speed does not depend on what the weights learnt). For each context C the stream is
prompted with C - N tokens and writes N more (`--new-tokens`), greedy, so every method does the same work per
token at the same positions; the methods alternate (the order rotates), each repeated (`--repeats`); the median
and the spread (min-max) of tokens/s are printed. For cached and linear the prompt's pass (one parallel pass) is
not counted, so the figure is the cost of a token written at that context; for rerun, every token rereads the
whole prefix, which is its cost. Tracing is excluded (a first call per shape). Random weights rarely write the
end-of-text token; a stream that did would stop early and read slower here, not faster.

Usage: python benchmarks/lm_generation.py [--contexts 128 512 2048] [--new-tokens 64] [--repeats 3]
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
from kpipe.families.gpt.decoding import gpt_decoder  # noqa: E402
from kpipe.families.gpt.model import build_gpt  # noqa: E402
from kpipe.preprocessing.byte_bpe import ByteBPE  # noqa: E402
from kpipe.tasks.lm.signatures import LanguageModelServing  # noqa: E402


def synthetic_bpe(size: int) -> ByteBPE:
    """A vocabulary of `size` tokens learnt on random words (the tokenizer is not what is timed)."""
    rng = np.random.default_rng(0)
    letters = list("abcdefghijklmnopqrstuvwxyz")
    texts = [" ".join("".join(rng.choice(letters, rng.integers(2, 9))) for _ in range(40)) for _ in range(3000)]
    return ByteBPE.learn(texts, size)


def generation_seconds(serving: LanguageModelServing, prompt: str, new_tokens: int) -> float:
    started = time.perf_counter()
    serving.generate(tf.constant([prompt]), tf.constant(new_tokens), tf.constant(0.0), tf.constant(0),
                     tf.constant(1.0), tf.constant(-1))
    return time.perf_counter() - started


def exported_rate(serving: LanguageModelServing, prompt: str, new_tokens: int) -> float:
    """Tokens/s of the export's `generate` per new token, the prompt's pass excluded: (N - 1) tokens over the time
    of writing N less the time of writing one (the same prompt read both times)."""
    return (new_tokens - 1) / (generation_seconds(serving, prompt, new_tokens) - generation_seconds(serving, prompt, 1))


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
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    keras.utils.set_random_seed(0)
    bpe = synthetic_bpe(8000)
    longest = max(args.contexts)
    servings = {}
    for attention in ("softmax", "linear"):
        config = GPTConfig(vocabulary_size=bpe.size, max_sequence_length=longest, num_layers=2, num_heads=4,
                           hidden_dim=128, intermediate_dim=512, dropout=0.0, attention=attention)
        model = build_gpt(config)
        servings[attention] = LanguageModelServing(model, gpt_decoder(model, config), bpe, longest, longest)
    model = servings["softmax"].model
    forward = tf.function(lambda x: model({"token_ids": x, "padding_mask": tf.ones_like(x, tf.bool)}),
                          reduce_retracing=True)
    rng = np.random.default_rng(1)
    print(f"# {os.cpu_count()} CPUs · tensorflow {tf.__version__} · gpt 2x128, vocabulary {bpe.size} · one stream, "
          f"greedy, {args.new_tokens} new tokens · tokens/s, median of {args.repeats} (min-max)")
    methods = {"cached": "softmax, cached", "linear": "linear, recurrent", "rerun": "rerun (keras-io)"}
    print(f"{'context':>7s} " + " ".join(f"{title:>22s}" for title in methods.values())
          + f" {'cached / rerun':>15s} {'linear / rerun':>15s}")
    rates = {}
    for context in args.contexts:
        prompt_ids = [bpe.end_of_text] + rng.integers(1, bpe.size, context - args.new_tokens - 1).tolist()
        prompt = bpe.decode(prompt_ids[1:])
        # the prompt as text must tokenize to as many tokens (random ids can merge): trim to fit the context
        while len(bpe.encode([prompt])[0]) + 1 + args.new_tokens > context:
            prompt = prompt[:-8]
        ids = [bpe.end_of_text] + bpe.encode([prompt])[0]
        for serving in servings.values():
            exported_rate(serving, prompt, args.new_tokens)  # traces this shape
        rerun_seconds(forward, ids, 2)

        def rate(method):
            if method == "rerun":
                return args.new_tokens / rerun_seconds(forward, ids, args.new_tokens)
            return exported_rate(servings["softmax" if method == "cached" else "linear"], prompt, args.new_tokens)

        timings = {method: [] for method in methods}
        order = list(methods)
        for repeat in range(args.repeats):
            for method in order[repeat % 3:] + order[:repeat % 3]:  # each method first in turn
                timings[method].append(rate(method))

        def cell(values):
            return f"{statistics.median(values):8.1f} ({min(values):.0f}-{max(values):.0f})"

        medians = {method: statistics.median(values) for method, values in timings.items()}
        rates[context] = medians
        print(f"{context:7d} " + " ".join(f"{cell(timings[method]):>22s}" for method in methods)
              + f" {medians['cached'] / medians['rerun']:15.1f} {medians['linear'] / medians['rerun']:15.1f}")
    first, last = min(rates), max(rates)
    for method in methods:
        print(f"{methods[method]}: tokens/s at context {last} / at {first}: "
              f"{rates[last][method] / rates[first][method]:.2f}")


if __name__ == "__main__":
    main()
