"""Answering with a reader export (`kpipe answer`): questions and their contexts -> the answer span (its exact
characters, character offsets into the context, score). Imports no training code."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from kpipe.errors import KpipeError

BATCH = 32  # questions per call of the SavedModel (a long context is several windows)


def answer_questions(model_dir: str | Path, questions: list[str], contexts: list[str],
                     on_batch: Callable[[int], None] | None = None, n_best: int = 0) -> list[dict]:
    """One dict per question: "answer" ("" when the model answers none), "start" and "end" (character offsets
    into the context, end exclusive; -1 for no answer) and "score" (the span's probability); with `n_best` k > 0
    also "n_best", the k likeliest spans (dicts of the same keys, likeliest first, fewer when the context holds
    fewer). `model_dir` is a SavedModel export or its ONNX / LiteRT export (answered without TensorFlow)."""
    from kpipe.portable.runtime import is_portable

    if is_portable(model_dir):
        from kpipe.portable.reader import PortableReader

        reader = PortableReader.open(model_dir)
        serve = lambda question, context: reader.answer(list(question), list(context))  # noqa: E731
        candidates = lambda question, context: reader.n_best(list(question), list(context), n_best)  # noqa: E731
        as_input = lambda texts: texts  # noqa: E731
    else:
        import tensorflow as tf

        from kpipe.exports.saved_model import load_saved_model

        signatures = load_saved_model(Path(model_dir)).signatures  # its tokenizer is TensorFlow Text's
        if n_best and "n_best" not in signatures:
            raise KpipeError(f"{model_dir} was exported before n-best answers existed (it has no n_best signature): "
                             "rerun its pipeline to export one")
        serve = lambda question, context: {k: v.numpy() for k, v in signatures["serving_default"](  # noqa: E731
            question=question, context=context).items()}
        candidates = lambda question, context: {k: v.numpy() for k, v in signatures["n_best"](  # noqa: E731
            question=question, context=context, k=tf.constant(n_best)).items()}
        as_input = lambda texts: tf.constant(texts, tf.string)  # noqa: E731
    found = answers_of(serve, questions, contexts, on_batch, as_input)
    if n_best:
        for begin in range(0, len(questions), BATCH):
            out = candidates(as_input(questions[begin:begin + BATCH]), as_input(contexts[begin:begin + BATCH]))
            for i, answer in enumerate(found[begin:begin + BATCH]):
                answer["n_best"] = [{"answer": out["answers"][i, r].decode("utf-8"), "start": int(out["starts"][i, r]),
                                     "end": int(out["ends"][i, r]), "score": round(float(out["scores"][i, r]), 4)}
                                    for r in range(out["answers"].shape[1]) if out["starts"][i, r] >= 0]
    return found


def answers_of(serve, questions, contexts, on_batch, as_input) -> list[dict]:
    """`serve(as_input(questions), as_input(contexts))` BATCH questions at a time, as one dict per question."""
    found = []
    for begin in range(0, len(questions), BATCH):
        out = serve(as_input(questions[begin:begin + BATCH]), as_input(contexts[begin:begin + BATCH]))
        found += [{"answer": out["answer"][i].decode("utf-8"), "start": int(out["start"][i]),
                   "end": int(out["end"][i]), "score": round(float(out["score"][i]), 4)}
                  for i in range(len(out["answer"]))]
        if on_batch:
            on_batch(len(out["answer"]))
    return found
