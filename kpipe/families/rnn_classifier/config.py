"""The `rnn_classifier` family's config, without TensorFlow (parsed and checked before TensorFlow loads)."""

from __future__ import annotations

import dataclasses

from kpipe.config.constraints import Checked, above, at_least, fraction, layer_sizes, one_of, setting
from kpipe.layers.settings import CELL_CLASSES

EMBEDDING_TRAINING = ("trainable", "frozen", "two_phase")
RNN_POOLINGS = ("last", "max", "mean", "max_mean")  # what the recurrent stack hands the head


@dataclasses.dataclass(frozen=True, kw_only=True)
class RNNClassifierConfig(Checked):
    """Hyperparameters of `build_rnn_classifier`.

    Args:
        family: always "rnn_classifier" (selects this builder in a pipeline config).
        embedding_dim: size of the token embedding.
        cell: "lstm" or "gru".
        units: units of each stacked recurrent layer, bottom first (per direction).
        bidirectional: wrap every recurrent layer in `Bidirectional`.
        dropout: dropout on each recurrent layer's inputs and before the head.
        recurrent_dropout: dropout on the recurrent state (note: any value > 0 rules out cuDNN).
        pooling: what the last recurrent layer hands the head: "last" (its final state; both
            directions' when bidirectional), or the masked "max", "mean" or both concatenated
            ("max_mean") of its outputs over every non-padding token.
        pretrained_embeddings: word vectors to start the embedding from ("glove:6B.50d", or a
            GloVe/word2vec text file; see `kpipe.vectors.word_vectors`); "" learns it from scratch. Used by
            the classify pipeline; `embedding_dim` must match the vectors.
        embedding_training: "trainable" (fine-tune the vectors from the start), "frozen" (never
            update them) or "two_phase" (frozen for `frozen_epochs` epochs, then fine-tuned with the
            rest of the model at `fine_tune_learning_rate`).
        frozen_epochs: with "two_phase", the epochs before the embedding is unfrozen.
        fine_tune_learning_rate: with "two_phase", the learning rate after unfreezing (usually about
            10x lower than `training.learning_rate`).
        vocabulary_size: number of token ids (set by kpipe from the fitted vocabulary).
        num_classes: number of classes (set by kpipe from the data); 2 gives one sigmoid unit.
        text_pairs: the inputs are pairs of texts, (batch, 2, time) ids, read by one shared (siamese)
            encoder (set by kpipe from the data).
    """

    family: str = setting("rnn_classifier", one_of(("rnn_classifier",)))
    embedding_dim: int = setting(128, at_least(1))
    cell: str = setting("lstm", one_of(CELL_CLASSES))
    units: tuple[int, ...] = setting((64,), layer_sizes())
    bidirectional: bool = True
    dropout: float = setting(0.0, fraction())
    recurrent_dropout: float = setting(0.0, fraction())
    pooling: str = setting("last", one_of(RNN_POOLINGS))
    pretrained_embeddings: str = ""
    embedding_training: str = setting("trainable", one_of(EMBEDDING_TRAINING))
    frozen_epochs: int = setting(2, at_least(1))
    fine_tune_learning_rate: float = setting(1e-4, above(0.0))
    vocabulary_size: int = setting(20000, at_least(2), derived=True)
    num_classes: int = setting(2, at_least(2), derived=True)
    multi_label: bool = setting(False, derived=True)  # one sigmoid per label (set by kpipe)
    text_pairs: bool = setting(False, derived=True)  # siamese encoder (set by kpipe)
