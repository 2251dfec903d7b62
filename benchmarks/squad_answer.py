"""An answer export on its own test split: quality with windows beside the keras-io recipe's rule, and speed beside
the bare encoder.

Quality. The keras-io "Text Extraction with BERT" recipe reads one window and leaves out every context that does not
fit it. The export's test questions are split by how many windows their context takes at the export's settings;
EM/F1 (official SQuAD v1.1) are printed on all questions, on those the recipe keeps (one window) and on those it
leaves out, and the recipe's own figure on all questions (a left-out question scores 0). The same trained model
answers in every column: what differs is only whether the long contexts are read through windows.

Speed. Single questions on contexts of about 150 and 600 words (test contexts joined), p50 and spread (min-max) of
`--repeats` calls of the SavedModel's `serving_default` (raw strings in: windows, offsets and decoding in the graph)
beside the bare encoder (`model.keras` in a `tf.function`) on the same windows, already tokenized: the plain reference, alternated with
it. Batched: questions/s on the test split, batches of 32, beside the encoder on the same windows.

Portable exports (`--portable`, folders written by `kpipe export`): the share of test questions whose answer (text and
offsets) equals the SavedModel's, and their single-question p50 in the same alternating loop.

Usage: python benchmarks/squad_answer.py saved_models/squad-minilm/1 --data '../shared/data/qa/squad-*.json.gz' \
           [--portable saved_models/squad-minilm/1-onnx saved_models/squad-minilm/1-onnx-int8]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import time
import tomllib
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import kpipe.families.pretrained_reader.model  # noqa: E402,F401  (registers the custom layer and loss)
from kpipe.datasets.questions import QuestionsDataConfig, load_questions  # noqa: E402
from kpipe.evaluation.squad import squad_scores  # noqa: E402
from kpipe.exports.saved_model import load_saved_model  # noqa: E402
from kpipe.preprocessing.answer_windows import AnswerWindows  # noqa: E402
from kpipe.pretrained.inputs import trim_to_longest  # noqa: E402
from kpipe.pretrained.presets import load_word_piece_tokenizer  # noqa: E402

BATCH = 32


def spread(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:7.1f} ms ({min(values) * 1000:.1f}-{max(values) * 1000:.1f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("export", type=Path)
    parser.add_argument("--data", required=True, help="the SQuAD files the export was trained on (its split is "
                                                      "redone from its config's seed and fractions)")
    parser.add_argument("--preset", help="the encoder's folder, if the config's is not on this machine")
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--portable", nargs="*", default=[], type=Path, help="ONNX / LiteRT exports of the same model")
    args = parser.parse_args()

    config = tomllib.loads((args.export / "config.toml").read_text())
    data = {k: v for k, v in config["data"].items() if k in {f.name for f in dataclasses.fields(QuestionsDataConfig)}}
    splits = load_questions(QuestionsDataConfig(**{**data, "source": "shards" if "*" in args.data else "file",
                                                   "path": args.data, "origin": ""}))
    pre = config["preprocessing"]
    tokenizer = load_word_piece_tokenizer(args.preset or config["model"]["preset"], pre["sequence_length"])
    windows = AnswerWindows(tokenizer, sequence_length=pre["sequence_length"], stride=pre["stride"],
                            max_question_tokens=pre["max_question_tokens"])
    serve = load_saved_model(args.export).signatures["serving_default"]
    model = keras.saving.load_model(args.export / "model.keras", compile=False)
    names = [t.name.split(":")[0] for t in model.inputs]
    encoder = tf.function(lambda inputs, training=False: model(inputs, training=training), reduce_retracing=True)

    def encoder_inputs(questions, contexts):
        out = windows(tf.constant(questions), tf.constant(contexts))
        return trim_to_longest({name: out[name] for name in names}), out["example"].numpy()

    test = splits.test
    predictions, answer_seconds, encoder_seconds, counts = {}, [], [], np.zeros(len(test), int)
    for begin in range(0, len(test), BATCH):
        chunk = test[begin:begin + BATCH]
        questions, contexts = [q.question for q in chunk], [q.context for q in chunk]
        inputs, example = encoder_inputs(questions, contexts)
        counts[begin:begin + len(chunk)] = np.bincount(example, minlength=len(chunk))
        started = time.perf_counter()
        out = serve(question=tf.constant(questions), context=tf.constant(contexts))
        answer_seconds.append(time.perf_counter() - started)
        started = time.perf_counter()
        encoder(inputs, training=False)
        encoder_seconds.append(time.perf_counter() - started)
        predictions.update({q.id: a.decode("utf-8") for q, a in zip(chunk, out["answer"].numpy())})

    one = [q for q, n in zip(test, counts) if n == 1]
    more = [q for q, n in zip(test, counts) if n > 1]
    everything = squad_scores(test, predictions)
    kept = squad_scores(one, predictions)
    left = squad_scores(more, predictions)
    recipe = squad_scores(test, {q.id: predictions[q.id] for q in one})
    print(f"test split: {len(test)} questions, {len({q.article for q in test})} articles; windows of "
          f"{pre['sequence_length']} pieces, stride {pre['stride']}: {len(more)} contexts take more than one "
          f"(up to {counts.max()})")
    print(f"{'':38} {'EM':>6} {'F1':>6} questions")
    for name, s in (("windows, all questions", everything), ("one window: kept by the recipe", kept),
                    ("more than one: left out by the recipe", left),
                    ("the recipe's rule on all (left out = 0)", recipe)):
        print(f"{name:38} {s['exact_match']:6.2f} {s['f1']:6.2f} {s['questions']}")
    print(f"batched ({BATCH} questions a call): {len(test) / sum(answer_seconds):.1f} questions/s with windows, "
          f"offsets and decoding in the graph; the bare encoder on the same windows "
          f"{len(test) / sum(encoder_seconds):.1f} questions/s")

    from kpipe.portable.reader import PortableReader

    portables = {folder.name: PortableReader.open(folder) for folder in args.portable}
    for name, reader in portables.items():
        same = 0
        for begin in range(0, len(test), BATCH):
            chunk = test[begin:begin + BATCH]
            questions, contexts = [q.question for q in chunk], [q.context for q in chunk]
            mine = reader.answer(questions, contexts)
            theirs = serve(question=tf.constant(questions), context=tf.constant(contexts))
            same += sum(int(a == b and s0 == s1 and e0 == e1) for a, b, s0, s1, e0, e1 in zip(
                mine["answer"], theirs["answer"].numpy(), mine["start"], theirs["start"].numpy(), mine["end"],
                theirs["end"].numpy()))
        print(f"{name}: {same / len(test):.2%} of the test questions answered as the SavedModel does "
              f"(same text and offsets)")

    text = " ".join(q.context for q in dict((q.context, q) for q in test).values()).split()
    question = test[0].question
    for words in (150, 600):
        context = " ".join(text[:words])
        inputs, _ = encoder_inputs([question], [context])
        calls = {"SavedModel": lambda: serve(question=tf.constant([question]),
                                             context=tf.constant([context]))["answer"].numpy(),
                 "bare encoder": lambda: np.asarray(encoder(inputs, training=False)),
                 **{name: (lambda r=reader: r.answer([question], [context])) for name, reader in portables.items()}}
        timings = {name: [] for name in calls}
        for call in calls.values():  # a first call of each shape traces: not timed
            call()
        for repeat in range(args.repeats):
            for name in (list(calls) if repeat % 2 == 0 else list(reversed(calls))):
                started = time.perf_counter()
                calls[name]()
                timings[name].append(time.perf_counter() - started)
        print(f"one question, {words}-word context ({len(inputs['token_ids'])} window(s)), p50 (min-max): "
              + "; ".join(f"{name} {spread(values)}" for name, values in timings.items()))


if __name__ == "__main__":
    main()
