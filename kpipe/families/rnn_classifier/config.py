"""The `rnn_classifier` family's config, without TensorFlow (parsed and checked before TensorFlow loads)."""

from __future__ import annotations

import dataclasses

from kpipe.config.strict import DERIVED, check_choice, check_layer_sizes, check_range
from kpipe.layers.settings import CELL_CLASSES

EMBEDDING_TRAINING = ("trainable", "frozen", "two_phase")
RNN_POOLINGS = ("last", "max", "mean", "max_mean")  # what the recurrent stack hands the head


@dataclasses.dataclass(frozen=True, kw_only=True)
class RNNClassifierConfig:
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

    family: str = "rnn_classifier"
    embedding_dim: int = 128
    cell: str = "lstm"
    units: tuple[int, ...] = (64,)
    bidirectional: bool = True
    dropout: float = 0.0
    recurrent_dropout: float = 0.0
    pooling: str = "last"
    pretrained_embeddings: str = ""
    embedding_training: str = "trainable"
    frozen_epochs: int = 2
    fine_tune_learning_rate: float = 1e-4
    vocabulary_size: int = dataclasses.field(default=20000, metadata=DERIVED)
    num_classes: int = dataclasses.field(default=2, metadata=DERIVED)
    multi_label: bool = dataclasses.field(default=False, metadata=DERIVED)  # one sigmoid per label (set by kpipe)
    text_pairs: bool = dataclasses.field(default=False, metadata=DERIVED)  # siamese encoder (set by kpipe)

    def __post_init__(self):
        check_choice("family", self.family, ("rnn_classifier",))
        check_range("embedding_dim", self.embedding_dim, low=1)
        check_choice("cell", self.cell, CELL_CLASSES)
        check_layer_sizes("units", self.units)
        check_range("dropout", self.dropout, low=0.0, high=1.0, high_inclusive=False)
        check_range("recurrent_dropout", self.recurrent_dropout, low=0.0, high=1.0, high_inclusive=False)
        check_choice("pooling", self.pooling, RNN_POOLINGS)
        check_choice("embedding_training", self.embedding_training, EMBEDDING_TRAINING)
        check_range("frozen_epochs", self.frozen_epochs, low=1)
        check_range("fine_tune_learning_rate", self.fine_tune_learning_rate, low=0.0, low_inclusive=False)
        check_range("vocabulary_size", self.vocabulary_size, low=2)
        check_range("num_classes", self.num_classes, low=2)
