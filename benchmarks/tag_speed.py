"""How fast a tag export tags sentences, beside the feature CRF (sklearn-crfsuite) on the same sentences.

Batched: sentences/s of the SavedModel's `tag_tokens` (pre-split words, `--batch-size` sentences a call) over
every sentence of `--dev`, and of the feature CRF's `predict` (features made in Python, as its users do).
Single sentence: p50/p90 of one call with one sentence, for `tag_tokens`, for `serving_default` on the raw text
(the words split in the graph) and for the CRF. Each measurement is repeated, the two taggers alternating which goes
first; the table gives the median and the spread (min-max) of the repeats. The CRF is trained on `--crf-sentences`
sentences of `--data` (its speed depends on its feature count, which grows with them; 100 L-BFGS iterations).

Usage:
    python benchmarks/tag_speed.py --model saved_models/ner-conll-bilstm/1 \
        --data conll2003-train.txt.gz --dev conll2003-valid.txt.gz [--repeats 3] \
        [--portable saved_models/ner-conll-bilstm/1-onnx saved_models/ner-conll-bilstm/1-litert-int8 ...]

Each `--portable` export (`kpipe export`) gets the same rows (its `tag_tokens` in NumPy around onnxruntime or
LiteRT; LiteRT answers one sentence a call) and its agreement with the SavedModel: the share of the dev file's words
given the same tag, and of its sentences given the same entities.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def sentences_of(path: str, limit: int = 0) -> list[tuple[list[str], list[str]]]:
    from kpipe.datasets.tagged import read_conll

    return [sentence for _, sentence, _ in read_conll(Path(path), limit=limit)]


def padded(batch: list[list[str]]):
    import numpy as np

    width = max(len(words) for words in batch)
    return np.array([words + [""] * (width - len(words)) for words in batch], dtype=object)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, help="a tag export (a version folder)")
    parser.add_argument("--data", required=True, help="CoNLL training file: the CRF's training sentences")
    parser.add_argument("--dev", required=True, help="CoNLL file whose sentences are tagged")
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--crf-sentences", type=int, default=14_000)
    parser.add_argument("--single", type=int, default=300, help="sentences timed one at a time")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--portable", nargs="*", default=[], help="portable exports of --model to time beside it")
    args = parser.parse_args()

    import numpy as np
    import sklearn_crfsuite
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (registers the ops the export splits words with)

    from kpipe.evaluation.tagging import word_features

    dev = [words for words, _ in sentences_of(args.dev)]
    train = sentences_of(args.data, limit=args.crf_sentences)
    crf = sklearn_crfsuite.CRF(algorithm="lbfgs", c1=0.1, c2=0.1, max_iterations=100, all_possible_transitions=True)
    started = time.perf_counter()
    crf.fit([[word_features(w, i) for i in range(len(w))] for w, _ in train], [t for _, t in train])
    print(f"feature CRF trained on {len(train)} sentences in {time.perf_counter() - started:.0f} s")
    model = tf.saved_model.load(args.model)
    tag_tokens, serve = model.signatures["tag_tokens"], model.signatures["serving_default"]
    batches = [dev[i:i + args.batch_size] for i in range(0, len(dev), args.batch_size)]
    single = dev[:args.single]
    tag_tokens(tokens=tf.constant(padded(batches[0])))  # warm-up: the first calls trace nothing, but allocate
    serve(text=tf.constant([" ".join(single[0])]))

    def savedmodel_batched():
        for batch in batches:
            tag_tokens(tokens=tf.constant(padded(batch)))

    def crf_batched():
        crf.predict([[word_features(w, i) for i in range(len(w))] for w in dev])

    def one_by_one(call) -> list[float]:
        seconds = []
        for words in single:
            started = time.perf_counter()
            call(words)
            seconds.append(time.perf_counter() - started)
        return seconds

    singles = {"SavedModel tag_tokens": lambda w: tag_tokens(tokens=tf.constant(padded([w]))),
               "SavedModel serving_default (raw text)": lambda w: serve(text=tf.constant([" ".join(w)])),
               "feature CRF": lambda w: crf.predict_single([word_features(w, i) for i in range(len(w))])}
    rates = {"SavedModel tag_tokens": [], "feature CRF": []}
    batched = [("SavedModel tag_tokens", savedmodel_batched), ("feature CRF", crf_batched)]
    agreement = portable_rows(args.portable, tag_tokens, batches, singles, rates, batched)
    latencies = {name: [] for name in singles}
    for repeat in range(args.repeats):
        order = batched
        for name, run in order if repeat % 2 == 0 else order[::-1]:
            started = time.perf_counter()
            run()
            rates[name].append(len(dev) / (time.perf_counter() - started))
        for name in (list(singles) if repeat % 2 == 0 else list(singles)[::-1]):
            latencies[name].append(one_by_one(singles[name]))

    words = sum(len(w) for w in dev)
    print(f"\n{len(dev)} sentences ({words} words) of {args.dev}; batches of {args.batch_size}; "
          f"{args.repeats} repeats; {os.cpu_count()} cores")
    print(f"{'batched':<40} {'sentences/s median':>18} {'(min-max)':>16}")
    for name, values in rates.items():
        print(f"{name:<40} {statistics.median(values):>18.0f} {f'({min(values):.0f}-{max(values):.0f})':>16}")
    print(f"\n{'one sentence a call':<40} {'p50 ms median':>14} {'(min-max)':>14} {'p90 ms':>8}")
    for name, repeats in latencies.items():
        p50 = [1000 * float(np.percentile(r, 50)) for r in repeats]
        p90 = statistics.median(1000 * float(np.percentile(r, 90)) for r in repeats)
        print(f"{name:<40} {statistics.median(p50):>14.2f} {f'({min(p50):.2f}-{max(p50):.2f})':>14} {p90:>8.2f}")
    if agreement:
        print(f"\n{'agreement with the SavedModel':<40} {'words, same tag':>16} {'sentences, same entities':>25}")
        for name, (words_same, sentences_same) in agreement.items():
            print(f"{name:<40} {100 * words_same:>15.2f}% {100 * sentences_same:>24.2f}%")


def portable_rows(folders, tag_tokens, batches, singles, rates, batched) -> dict:
    """Adds each portable export's batched and single-sentence calls to the tables, and returns its agreement with
    the SavedModel over every batch: (share of words with the same tag, of sentences with the same entities)."""
    import tensorflow as tf
    from seqeval.metrics.sequence_labeling import get_entities

    from kpipe.portable.tagger import PortableTagger

    agreement = {}
    for folder in folders:
        tagger, name = PortableTagger.open(folder), Path(folder).name
        same_words = words = same_sentences = sentences = 0
        for batch in batches:
            theirs = tag_tokens(tokens=tf.constant(padded(batch)))["tags"].numpy()
            mine = tagger.tag_tokens(padded(batch))["tags"]
            for words_, a, b in zip(batch, theirs, mine):
                a, b = [t.decode() for t in a[:len(words_)]], [t.decode() for t in b[:len(words_)]]
                same_words += sum(x == y for x, y in zip(a, b))
                words += len(words_)
                same_sentences += get_entities(a) == get_entities(b)
                sentences += 1
        agreement[name] = (same_words / words, same_sentences / sentences)
        rates[name] = []
        batched.append((name, lambda tagger=tagger: [tagger.tag_tokens(padded(b)) for b in batches]))
        singles[f"{name} tag_tokens"] = lambda w, tagger=tagger: tagger.tag_tokens(padded([w]))
        singles[f"{name} serving_default (raw text)"] = lambda w, tagger=tagger: tagger.serve([" ".join(w)])
    return agreement


if __name__ == "__main__":
    main()
