"""Answering with a reader export (`kpipe answer`): questions and their contexts -> the answer span (its exact
characters, character offsets into the context, score). Imports no training code."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

BATCH = 32  # questions per call of the SavedModel (a long context is several windows)


def answer_questions(model_dir: str | Path, questions: list[str], contexts: list[str],
                     on_batch: Callable[[int], None] | None = None) -> list[dict]:
    """One dict per question: "answer" ("" when the model answers none), "start" and "end" (character offsets
    into the context, end exclusive; -1 for no answer) and "score" (the span's probability)."""
    import tensorflow as tf

    from kpipe.exports.saved_model import load_saved_model

    serve = load_saved_model(Path(model_dir)).signatures["serving_default"]  # its tokenizer is TensorFlow Text's
    found = []
    for begin in range(0, len(questions), BATCH):
        out = {k: v.numpy() for k, v in serve(question=tf.constant(questions[begin:begin + BATCH], tf.string),
                                              context=tf.constant(contexts[begin:begin + BATCH], tf.string)).items()}
        found += [{"answer": out["answer"][i].decode("utf-8"), "start": int(out["start"][i]),
                   "end": int(out["end"][i]), "score": round(float(out["score"][i]), 4)}
                  for i in range(len(out["answer"]))]
        if on_batch:
            on_batch(len(out["answer"]))
    return found
