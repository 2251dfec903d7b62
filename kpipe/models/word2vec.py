"""Skip-gram with negative sampling (Mikolov et al. 2013) as a Keras model.

Two embedding tables: `target` (the word vectors kept afterwards) and `context`. For a target word t,
its true context c and k noise words n_1..n_k, the model outputs the scores
[v_t · u_c, v_t · u_n1, ..., v_t · u_nk]; the loss is the negative-sampling objective
-log σ(v_t · u_c) - Σ_i log σ(-v_t · u_ni), i.e. binary cross-entropy summed over the k + 1 scores.
"""

from __future__ import annotations

import dataclasses

import keras

from kpipe.config import DERIVED, check_choice, check_range


@dataclasses.dataclass(frozen=True, kw_only=True)
class Word2VecConfig:
    """Hyperparameters of `build_skipgram`.

    Args:
        family: always "skipgram".
        embedding_dim: size of the word vectors.
        vocabulary_size: words (set by kpipe from the corpus).
        negatives: noise words per pair (set by kpipe from `preprocessing.negatives`).
    """

    family: str = "skipgram"
    embedding_dim: int = 100
    vocabulary_size: int = dataclasses.field(default=10000, metadata=DERIVED)
    negatives: int = dataclasses.field(default=5, metadata=DERIVED)

    def __post_init__(self):
        check_choice("family", self.family, ("skipgram",))
        check_range("embedding_dim", self.embedding_dim, low=1)
        check_range("vocabulary_size", self.vocabulary_size, low=2)
        check_range("negatives", self.negatives, low=1)


@keras.saving.register_keras_serializable(package="kpipe")
def negative_sampling_loss(labels, scores):
    """Binary cross-entropy of each score, summed over the true context and its k noise words."""
    return keras.ops.sum(keras.ops.binary_crossentropy(labels, scores, from_logits=True), axis=-1)


def build_skipgram(config: Word2VecConfig) -> keras.Model:
    """(targets (b,), contexts (b,), negatives (b, k)) → scores (b, 1 + k), column 0 the true context.

    Initialised as word2vec does: target vectors uniform in ±0.5 / dim, context vectors zero.

    Example:
        >>> model = build_skipgram(Word2VecConfig(vocabulary_size=100, embedding_dim=8, negatives=5))
        >>> model.output_shape
        (None, 6)
    """
    targets = keras.Input(shape=(), dtype="int32", name="targets")
    contexts = keras.Input(shape=(), dtype="int32", name="contexts")
    negatives = keras.Input(shape=(config.negatives,), dtype="int32", name="negatives")
    limit = 0.5 / config.embedding_dim
    target_table = keras.layers.Embedding(config.vocabulary_size, config.embedding_dim, name="target",
                                          embeddings_initializer=keras.initializers.RandomUniform(-limit, limit))
    context_table = keras.layers.Embedding(config.vocabulary_size, config.embedding_dim, name="context",
                                           embeddings_initializer="zeros")
    v = target_table(targets)                                                        # (b, d)
    candidates = keras.layers.Concatenate(axis=1)([keras.ops.expand_dims(contexts, 1), negatives])  # (b, 1 + k)
    u = context_table(candidates)                                                   # (b, 1 + k, d)
    scores = keras.layers.Dot(axes=(2, 1), name="scores")([u, v])                   # (b, 1 + k)
    return keras.Model([targets, contexts, negatives], scores, name="skipgram")
