"""Answering with a tagger export (`kpipe tag`): raw texts -> words, tags and entities, and the texts with their
entities marked. Imports no training code."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

BATCH = 256  # texts per call of the SavedModel


def tag_texts(model_dir: str | Path, texts: list[str], on_batch: Callable[[int], None] | None = None) -> list[dict]:
    """One dict per text: "text", "words", "tags", "entities" ([{"label", "start", "end", "text", "score"}],
    character offsets into the text, end exclusive); `on_batch(n)` after each batch of n texts. `model_dir` is a
    SavedModel export or its ONNX / LiteRT export (answered without TensorFlow)."""
    serve = serving_default(model_dir)
    answers = []
    for begin in range(0, len(texts), BATCH):
        chunk = texts[begin:begin + BATCH]
        out = serve(chunk)
        for i, text in enumerate(chunk):
            words = [w.decode() for w in out["words"][i] if w]
            entities = [{"label": label.decode(), "start": int(start), "end": int(end), "text": covered.decode(),
                         "score": round(float(score), 4)}
                        for label, start, end, covered, score in zip(out["entity_labels"][i], out["entity_starts"][i],
                                                                     out["entity_ends"][i], out["entity_texts"][i],
                                                                     out["entity_scores"][i]) if label]
            answers.append({"text": text, "words": words,
                            "tags": [t.decode() for t in out["tags"][i][:len(words)]], "entities": entities})
        if on_batch:
            on_batch(len(chunk))
    return answers


def serving_default(model_dir: str | Path) -> Callable[[list[str]], dict]:
    """The export's `serving_default` as a function of a list of texts returning NumPy arrays."""
    from kpipe.portable.runtime import is_portable

    if is_portable(model_dir):
        from kpipe.portable.tagger import PortableTagger

        return PortableTagger.open(model_dir).serve
    import tensorflow as tf

    from kpipe.exports.saved_model import load_saved_model

    serve = load_saved_model(Path(model_dir)).signatures["serving_default"]  # its word splitting is TensorFlow Text's
    return lambda texts: {k: v.numpy() for k, v in serve(text=tf.constant(texts, tf.string)).items()}


def tag_tokens(model_dir: str | Path) -> Callable[[list[list[str]]], list]:
    """The export's `tag_tokens` as a function of sentences (lists of words) returning their tags (strings)."""
    import numpy as np

    from kpipe.portable.runtime import is_portable

    if is_portable(model_dir):
        from kpipe.portable.tagger import PortableTagger

        call = PortableTagger.open(model_dir).tag_tokens
    else:
        import tensorflow as tf

        from kpipe.exports.saved_model import load_saved_model

        signature = load_saved_model(Path(model_dir)).signatures["tag_tokens"]
        def call(padded):
            return {k: v.numpy() for k, v in signature(tokens=tf.constant(padded, tf.string)).items()}

    def tags(sentences: list[list[str]]) -> list[list[str]]:
        width = max((len(words) for words in sentences), default=0)
        padded = np.array([words + [""] * (width - len(words)) for words in sentences], dtype=object).reshape(
            len(sentences), width)
        return [[t.decode() for t in row[:len(words)]] for row, words in zip(call(padded)["tags"], sentences)]
    return tags


def marked(answer: dict) -> str:
    """The text with each entity in brackets behind its label: "[PER Barack Obama] visited [LOC Paris]"."""
    text, pieces, at = answer["text"], [], 0
    for entity in answer["entities"]:
        pieces += [text[at:entity["start"]], f"[{entity['label']} {text[entity['start']:entity['end']]}]"]
        at = entity["end"]
    return "".join(pieces + [text[at:]])
