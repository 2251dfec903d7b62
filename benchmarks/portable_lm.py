"""A language model's portable exports beside its SavedModel: do they write and score the same, and how fast.

For each format, on a copy of `--model` (the export is written beside the copy):
- greedy agreement: the share of `--prompts` prompts (the first words of each line of `--text`) whose greedy
  continuation of `--new-tokens` tokens is the SavedModel's, character for character;
- scoring: per-word perplexity of the lines of `--text` through the SavedModel's `score` and the portable `score`;
- speed: one stream writing up to `--new-tokens` tokens greedily after one prompt, tokens/s of what it wrote (the
  prompt's pass included, for both), the SavedModel and the portable exports alternating which goes first; median
  and spread of `--repeats`.

Usage:
    python benchmarks/portable_lm.py --model saved_models/lm-bible/1 --text bible-sample.txt \
        [--formats onnx litert onnx:int8] [--prompts 20] [--new-tokens 64] [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, help="a language-model export (a version folder)")
    parser.add_argument("--text", required=True, help="a text file: its lines are scored, their first words prompt")
    parser.add_argument("--formats", nargs="+", default=["onnx", "litert"], help="FORMAT or FORMAT:QUANTIZATION")
    parser.add_argument("--prompts", type=int, default=20)
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    import tensorflow as tf

    from kpipe.exports.portable import export_portable
    from kpipe.exports.saved_model import load_saved_model
    from kpipe.portable.language_model import PortableLanguageModel
    from kpipe.preprocessing.byte_bpe import ByteBPE
    from kpipe.portable.export_files import TOKENIZER_FILE
    from kpipe.tasks.lm.predict import scored

    lines = [line for line in Path(args.text).read_text(encoding="utf-8").splitlines() if line.split()]
    prompts = [" ".join(line.split()[:4]) for line in lines[:args.prompts]]
    work = Path(tempfile.mkdtemp())
    source = work / "model" / "1"
    shutil.copytree(args.model, source)
    signatures = load_saved_model(source).signatures

    def saved_generate(texts):
        out = signatures["generate"](prompt=tf.constant(texts), max_new_tokens=tf.constant(args.new_tokens),
                                     temperature=tf.constant(0.0), top_k=tf.constant(0), top_p=tf.constant(1.0),
                                     seed=tf.constant(-1))
        return [t.decode("utf-8", "replace") for t in out["text"].numpy()]

    def saved_score(texts):
        return {k: v.numpy() for k, v in signatures["score"](text=tf.constant(texts)).items()}

    writers = {"SavedModel": saved_generate}
    print(f"{args.model}: {len(prompts)} prompts, {args.new_tokens} new tokens, {len(lines)} lines scored, "
          f"{os.cpu_count()} cores")
    print(f"{'export':<16} {'greedy texts equal':>19} {'perplexity/word':>16}")
    expected = saved_generate(prompts)
    print(f"{'SavedModel':<16} {'-':>19} {scored(saved_score, lines)['perplexity_per_word']:>16.3f}")
    for spec in args.formats:
        fmt, _, quantize = spec.partition(":")
        model = PortableLanguageModel.open(export_portable(source, fmt, quantize or "none"))
        texts = [t.decode("utf-8", "replace") for t in model.generate(prompts, args.new_tokens)["text"]]
        same = sum(a == b for a, b in zip(texts, expected)) / len(prompts)
        print(f"{spec:<16} {100 * same:>18.1f}% {scored(model.score, lines)['perplexity_per_word']:>16.3f}")
        writers[spec] = lambda texts, model=model: model.generate(texts, args.new_tokens)["text"]

    rates = {name: [] for name in writers}
    names = list(writers)
    for name in names:  # warm-up: the SavedModel's first call allocates
        writers[name](prompts[:1])
    bpe = ByteBPE.load(source / TOKENIZER_FILE)
    for repeat in range(args.repeats):
        for name in names if repeat % 2 == 0 else names[::-1]:
            started = time.perf_counter()
            text = writers[name](prompts[repeat % len(prompts):][:1])[0]
            seconds = time.perf_counter() - started
            written = bpe.encode([text.decode("utf-8", "replace") if isinstance(text, bytes) else text])[0]
            rates[name].append(max(len(written), 1) / seconds)  # a text may end before --new-tokens
    print(f"\n{'one stream, greedy':<16} {'tokens/s median':>16} {'(min-max)':>16}")
    for name, values in rates.items():
        print(f"{name:<16} {statistics.median(values):>16.1f} {f'({min(values):.1f}-{max(values):.1f})':>16}")
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
