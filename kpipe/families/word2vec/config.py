"""The `word2vec` family's config, without TensorFlow (parsed and checked before TensorFlow loads)."""

from __future__ import annotations

import dataclasses

from kpipe.config.constraints import Checked, at_least, one_of, setting


@dataclasses.dataclass(frozen=True, kw_only=True)
class Word2VecConfig(Checked):
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

    family: str = setting("skipgram", one_of(("skipgram", "cbow")))
    embedding_dim: int = setting(100, at_least(1))
    sparse_updates: bool = False
    vocabulary_size: int = setting(10000, at_least(2), derived=True)
    negatives: int = setting(5, at_least(1), derived=True)
    window: int = setting(5, at_least(1), derived=True)
