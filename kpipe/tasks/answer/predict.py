"""Answering with a reader export (`kpipe answer`): questions and their contexts -> the answer span (its exact
characters, character offsets into the context, score). Imports no training code."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

BATCH = 32  # questions per call of the SavedModel (a long context is several windows)


def answer_questions(model_dir: str | Path, questions: list[str], contexts: list[str],
                     on_batch: Callable[[int], None] | None = None) -> list[dict]:
    """One dict per question: "answer" ("" when the model answers none), "start" and "end" (character offsets
    into the context, end exclusive; -1 for no answer) and "score" (the span's probability). `model_dir` is a
    SavedModel export or its ONNX / LiteRT export (answered without TensorFlow)."""
    from kpipe.portable.runtime import is_portable

    if is_portable(model_dir):
        from kpipe.portable.reader import PortableReader

        reader = PortableReader.open(model_dir)
        serve = lambda question, context: reader.answer(list(question), list(context))  # noqa: E731
        return answers_of(serve, questions, contexts, on_batch, lambda x: x)
    import tensorflow as tf

    from kpipe.exports.saved_model import load_saved_model

    serve = load_saved_model(Path(model_dir)).signatures["serving_default"]  # its tokenizer is TensorFlow Text's
    return answers_of(lambda question, context: {k: v.numpy() for k, v in serve(question=question,
                                                                              context=context).items()},
                    questions, contexts, on_batch, lambda texts: tf.constant(texts, tf.string))


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
