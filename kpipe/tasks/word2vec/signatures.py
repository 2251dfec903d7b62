"""The word-vector export: an `embed` signature (raw words -> vectors), the GloVe and word2vec text files and
TensorBoard projector files.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import tensorflow as tf

from kpipe.portable.export_files import PROJECTOR_METADATA_FILE, PROJECTOR_VECTORS_FILE
from kpipe.vectors.word_vectors import WordVectors


class WordVectorServing(tf.Module):
    """Raw words -> vectors (zeros for a word outside the vocabulary)."""

    def __init__(self, vectors: WordVectors):
        super().__init__()
        self.table = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(tf.constant(vectors.words), tf.range(len(vectors), dtype=tf.int64)),
            default_value=len(vectors))
        self.matrix = tf.Variable(np.vstack([vectors.matrix, np.zeros((1, vectors.dim), np.float32)]),
                                  trainable=False)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="words")])
    def embed(self, words):
        return {"vectors": tf.gather(self.matrix, self.table.lookup(words))}


def write_word2vec_text(vectors: WordVectors, path: Path) -> Path:
    """The word2vec text format: a "count dim" header, then the GloVe-style lines."""
    with path.open("w", encoding="utf-8") as f:
        f.write(f"{len(vectors)} {vectors.dim}\n")
        for word, row in zip(vectors.words, vectors.matrix):
            f.write(word + " " + " ".join(f"{x:.6g}" for x in row) + "\n")
    return path


def write_projector_files(vectors: WordVectors, counts: np.ndarray, folder: Path) -> None:
    """vectors.tsv and metadata.tsv for projector.tensorflow.org or TensorBoard's projector."""
    np.savetxt(folder / PROJECTOR_VECTORS_FILE, vectors.matrix, delimiter="\t", fmt="%.6g")
    with (folder / PROJECTOR_METADATA_FILE).open("w", encoding="utf-8") as f:
        f.write("word\tcount\n")
        for word, count in zip(vectors.words, counts):
            f.write(f"{word}\t{count}\n")
