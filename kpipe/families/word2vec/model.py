"""word2vec with negative sampling (Mikolov et al. 2013) as Keras models: skip-gram and CBOW.

Two embedding tables: `word_vectors` (the input vectors, kept afterwards) and `output_vectors`.
Skip-gram: for a target word t, its true context c and k noise words n_1..n_k, the scores are
[v_t · u_c, v_t · u_n1, ..., v_t · u_nk]. CBOW: the mean h of the context words' input vectors is
scored against the target and the noise words, [h · u_t, h · u_n1, ...]. The loss is the
negative-sampling objective -log σ(s_0) - Σ_i log σ(-s_i): binary cross-entropy summed over the k + 1 scores.
"""

from __future__ import annotations

import keras

from kpipe.families.word2vec.config import Word2VecConfig


@keras.saving.register_keras_serializable(package="kpipe")
def negative_sampling_loss(labels, scores):
    """Binary cross-entropy of each score, summed over the true context and its k noise words."""
    return keras.ops.sum(keras.ops.binary_crossentropy(labels, scores, from_logits=True), axis=-1)


def _tables(config: Word2VecConfig, extra_rows: int = 0):
    """Input vectors uniform in ±0.5 / dim and zero output vectors, as word2vec initialises them."""
    limit = 0.5 / config.embedding_dim
    word_vectors = keras.layers.Embedding(config.vocabulary_size + extra_rows, config.embedding_dim,
                                          name="word_vectors",
                                          embeddings_initializer=keras.initializers.RandomUniform(-limit, limit))
    output_vectors = keras.layers.Embedding(config.vocabulary_size, config.embedding_dim, name="output_vectors",
                                            embeddings_initializer="zeros")
    return word_vectors, output_vectors


def build_skipgram(config: Word2VecConfig) -> keras.Model:
    """(targets (b,), contexts (b,), negatives (b, k)) → scores (b, 1 + k), column 0 the true context.

    Example:
        >>> model = build_skipgram(Word2VecConfig(vocabulary_size=100, embedding_dim=8, negatives=5))
        >>> model.output_shape
        (None, 6)
    """
    targets = keras.Input(shape=(), dtype="int32", name="targets")
    contexts = keras.Input(shape=(), dtype="int32", name="contexts")
    negatives = keras.Input(shape=(config.negatives,), dtype="int32", name="negatives")
    word_vectors, output_vectors = _tables(config)
    v = word_vectors(targets)                                                                       # (b, d)
    candidates = keras.layers.Concatenate(axis=1)([keras.ops.expand_dims(contexts, 1), negatives])  # (b, 1 + k)
    scores = keras.layers.Dot(axes=(2, 1), dtype="float32", name="scores")([output_vectors(candidates), v])           # (b, 1 + k)
    return keras.Model([targets, contexts, negatives], scores, name="skipgram")


def build_cbow(config: Word2VecConfig) -> keras.Model:
    """(contexts (b, 2·window), targets (b,), negatives (b, k)) → scores (b, 1 + k), column 0 the target.

    Context slots without a word hold id `vocabulary_size` (a zero row that is never trained) and are
    left out of the mean.

    Example:
        >>> model = build_cbow(Word2VecConfig(vocabulary_size=100, embedding_dim=8, negatives=5, window=2))
        >>> model.output_shape
        (None, 6)
    """
    contexts = keras.Input(shape=(2 * config.window,), dtype="int32", name="contexts")
    targets = keras.Input(shape=(), dtype="int32", name="targets")
    negatives = keras.Input(shape=(config.negatives,), dtype="int32", name="negatives")
    word_vectors, output_vectors = _tables(config, extra_rows=1)
    h = ContextMean(config.vocabulary_size, name="context_mean")([word_vectors(contexts), contexts])  # (b, d)
    candidates = keras.layers.Concatenate(axis=1)([keras.ops.expand_dims(targets, 1), negatives])    # (b, 1 + k)
    scores = keras.layers.Dot(axes=(2, 1), dtype="float32", name="scores")([output_vectors(candidates), h])
    return keras.Model([contexts, targets, negatives], scores, name="cbow")


@keras.saving.register_keras_serializable(package="kpipe")
class ContextMean(keras.layers.Layer):
    """Mean of the context vectors whose id is not the padding id."""

    def __init__(self, padding_id: int, **kwargs):
        super().__init__(**kwargs)
        self.padding_id = padding_id

    def call(self, inputs):
        vectors, ids = inputs
        mask = keras.ops.cast(keras.ops.not_equal(ids, self.padding_id), vectors.dtype)[..., None]
        return keras.ops.sum(vectors * mask, axis=1) / keras.ops.maximum(keras.ops.sum(mask, axis=1), 1.0)

    def compute_output_shape(self, input_shapes):
        return (input_shapes[0][0], input_shapes[0][2])

    def get_config(self):
        return super().get_config() | {"padding_id": self.padding_id}
