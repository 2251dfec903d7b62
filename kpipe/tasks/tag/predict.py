"""Answering with a tagger export (`kpipe tag`): raw texts -> words, tags and entities, and the texts with their
entities marked. Imports no training code."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

BATCH = 256  # texts per call of the SavedModel


def tag_texts(model_dir: str | Path, texts: list[str], on_batch: Callable[[int], None] | None = None) -> list[dict]:
    """One dict per text: "text", "words", "tags", "entities" ([{"label", "start", "end", "text", "score"}],
    character offsets into the text, end exclusive); `on_batch(n)` after each batch of n texts."""
    import tensorflow as tf

    from kpipe.exports.saved_model import load_saved_model

    loaded = load_saved_model(Path(model_dir))  # its word splitting is TensorFlow Text's
    serve = loaded.signatures["serving_default"]
    answers = []
    for begin in range(0, len(texts), BATCH):
        chunk = texts[begin:begin + BATCH]
        out = {k: v.numpy() for k, v in serve(text=tf.constant(chunk, tf.string)).items()}
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


def marked(answer: dict) -> str:
    """The text with each entity in brackets behind its label: "[PER Barack Obama] visited [LOC Paris]"."""
    text, pieces, at = answer["text"], [], 0
    for entity in answer["entities"]:
        pieces += [text[at:entity["start"]], f"[{entity['label']} {text[entity['start']:entity['end']]}]"]
        at = entity["end"]
    return "".join(pieces + [text[at:]])
