"""Sentence embeddings from an exported transformer classifier, and ranking sentences by cosine similarity.

The export's `embed` signature runs the WordPiece tokenizer and the encoder and returns the masked
mean of the encoder outputs (padding excluded); an empty string embeds as zeros, never NaN.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import numpy as np

from kpipe.exports.open import call_in_batches, concatenate, open_export
from kpipe.errors import KpipeError


def embed_texts(model: str | Path, texts: list[str], *, export_dir: str | Path = "saved_models",
                batch_size: int = 256, on_batch: Callable[[int], object] | None = None) -> np.ndarray:
    """(len(texts), hidden_dim) float32 embeddings of raw strings; `on_batch(n)` after each batch of n.

    Raises:
        KpipeError: the export has no `embed` signature (transformer classifiers and sentence encoders have one).
    """
    import tensorflow as tf

    # Sentence embeddings come from transformer classifiers (`kpipe run sentiment-transformer`), fine-tuned
    # pretrained encoders (`sentiment-minilm`) and pretrained encoders as they are (`minilm-embeddings`).
    loaded = open_export(model, task=("classify", "embed"), command="kpipe embed", export_dir=export_dir,
                         signature="embed").loaded
    return concatenate(call_in_batches(lambda batch: loaded.embed(tf.constant(list(batch)))["embedding"].numpy(),
                                       texts, batch_size=batch_size, on_batch=on_batch))


def cosine_similarities(query: np.ndarray, vectors: np.ndarray) -> np.ndarray:
    """Cosine of `query` (d,) with each row of `vectors` (n, d); 0 for an all-zero vector."""
    norms = np.linalg.norm(vectors, axis=1) * np.linalg.norm(query)
    return np.divide(vectors @ query, norms, out=np.zeros(len(vectors), np.float64), where=norms > 0)


def most_similar(model: str | Path, query: str, sentences: list[str], *, k: int = 10,
                 export_dir: str | Path = "saved_models") -> list[tuple[float, str]]:
    """The `k` sentences closest to `query` by cosine similarity of their embeddings, best first."""
    if k < 1:
        raise KpipeError(f"-k must be >= 1. Received: {k}")
    vectors = embed_texts(model, [query] + list(sentences), export_dir=export_dir)
    scores = cosine_similarities(vectors[0], vectors[1:])
    order = np.argsort(-scores, kind="stable")[:k]
    return [(float(scores[i]), sentences[i]) for i in order]
