"""The `word2vec` family's config, without TensorFlow (parsed and checked before TensorFlow loads)."""

from __future__ import annotations

import dataclasses

from kpipe.config.strict import DERIVED, check_choice, check_range


@dataclasses.dataclass(frozen=True, kw_only=True)
class Word2VecConfig:
    """Hyperparameters of `build_skipgram`.

    Args:
        family: "skipgram" (predict each context word from the target) or "cbow" (predict the target
            from the mean of its context words).
        embedding_dim: size of the word vectors.
        sparse_updates: train as word2vec does, by plain SGD on the rows each batch uses
            (`kpipe.families.word2vec.sparse_sgd`; `training.optimizer = "sgd"`, `training.learning_rate` is
            word2vec's α per pair, decayed linearly over the run); false: Keras' optimizer on the
            mean loss, which updates (and, for Adam, keeps moments for) every row at every step.
        vocabulary_size: words (set by kpipe from the corpus).
        negatives: noise words per pair (set by kpipe from `preprocessing.negatives`).
    """

    family: str = "skipgram"
    embedding_dim: int = 100
    sparse_updates: bool = False
    vocabulary_size: int = dataclasses.field(default=10000, metadata=DERIVED)
    negatives: int = dataclasses.field(default=5, metadata=DERIVED)
    window: int = dataclasses.field(default=5, metadata=DERIVED)

    def __post_init__(self):
        check_choice("family", self.family, ("skipgram", "cbow"))
        check_range("embedding_dim", self.embedding_dim, low=1)
        check_range("vocabulary_size", self.vocabulary_size, low=2)
        check_range("negatives", self.negatives, low=1)
        check_range("window", self.window, low=1)
