"""The sentence-encoder export: an `embed` signature that maps raw strings to unit-length embeddings, the
tokenizer inside.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from kpipe.pretrained import inputs as pretrained_inputs


class SentenceEncoderServing(tf.Module):
    """Raw strings -> {"embedding": (batch, hidden)}: the preset's tokenizer and the encoder in one graph."""

    def __init__(self, preprocessor, encoder):
        super().__init__()
        self.preprocessor, self.encoder = preprocessor, encoder

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="text")])
    def embed(self, text: tf.Tensor) -> dict[str, tf.Tensor]:
        return {"embedding": self.encoder(pretrained_inputs.encode(self.preprocessor, text), training=False)}


def embed_by_length(encoder, preprocessor, texts: np.ndarray, batch_size: int) -> np.ndarray:
    """(len(texts), hidden) embeddings, computed in batches of texts of similar token length (each batch
    cut to its longest text, so short texts cost little) and returned in the order of `texts`."""
    lengths = pretrained_inputs.token_lengths(texts, preprocessor)
    order = np.argsort(lengths, kind="stable")
    # One graph for every batch length (reduce_retracing makes the length dimension None after a few traces):
    # on all-MiniLM-L6-v2, 1,536 tweets, 2 cores, 217 tweets/s against 89 for eager calls (147 while tracing).
    call = tf.function(lambda inputs: encoder(inputs, training=False), reduce_retracing=True)
    embeddings = None
    for start in range(0, len(texts), batch_size):
        rows = order[start:start + batch_size]
        batch = call(pretrained_inputs.encode(preprocessor, tf.constant([str(t) for t in texts[rows]]))).numpy()
        if embeddings is None:
            embeddings = np.zeros((len(texts), batch.shape[1]), np.float32)
        embeddings[rows] = batch
    return embeddings if embeddings is not None else np.zeros((0, 0), np.float32)
