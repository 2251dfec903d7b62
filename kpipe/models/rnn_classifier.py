"""Embedding + stacked (Bi)LSTM/GRU text classifier, built with the functional API."""

from __future__ import annotations

import dataclasses
import logging

import keras

from kpipe.config import DERIVED, check_choice, check_layer_sizes, check_range
from kpipe.models.recurrent_cells import CELLS

log = logging.getLogger(__name__)

EMBEDDING_TRAINING = ("trainable", "frozen", "two_phase")


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
        pretrained_embeddings: word vectors to start the embedding from ("glove:6B.50d", or a
            GloVe/word2vec text file; see `kpipe.embeddings`); "" learns it from scratch. Used by
            the classify pipeline; `embedding_dim` must match the vectors.
        embedding_training: "trainable" (fine-tune the vectors from the start), "frozen" (never
            update them) or "two_phase" (frozen for `frozen_epochs` epochs, then fine-tuned with the
            rest of the model at `fine_tune_learning_rate`).
        frozen_epochs: with "two_phase", the epochs before the embedding is unfrozen.
        fine_tune_learning_rate: with "two_phase", the learning rate after unfreezing (usually about
            10x lower than `training.learning_rate`).
        vocabulary_size: number of token ids (set by kpipe from the fitted vocabulary).
        num_classes: number of classes (set by kpipe from the data); 2 gives one sigmoid unit.
    """

    family: str = "rnn_classifier"
    embedding_dim: int = 128
    cell: str = "lstm"
    units: tuple[int, ...] = (64,)
    bidirectional: bool = True
    dropout: float = 0.0
    recurrent_dropout: float = 0.0
    pretrained_embeddings: str = ""
    embedding_training: str = "trainable"
    frozen_epochs: int = 2
    fine_tune_learning_rate: float = 1e-4
    vocabulary_size: int = dataclasses.field(default=20000, metadata=DERIVED)
    num_classes: int = dataclasses.field(default=2, metadata=DERIVED)

    def __post_init__(self):
        check_choice("family", self.family, ("rnn_classifier",))
        check_range("embedding_dim", self.embedding_dim, low=1)
        check_choice("cell", self.cell, CELLS)
        check_layer_sizes("units", self.units)
        check_range("dropout", self.dropout, low=0.0, high=1.0, high_inclusive=False)
        check_range("recurrent_dropout", self.recurrent_dropout, low=0.0, high=1.0, high_inclusive=False)
        check_choice("embedding_training", self.embedding_training, EMBEDDING_TRAINING)
        check_range("frozen_epochs", self.frozen_epochs, low=1)
        check_range("fine_tune_learning_rate", self.fine_tune_learning_rate, low=0.0, low_inclusive=False)
        check_range("vocabulary_size", self.vocabulary_size, low=2)
        check_range("num_classes", self.num_classes, low=2)


def build_rnn_classifier(config: RNNClassifierConfig, *, embeddings_initializer="uniform",
                         trainable_embeddings: bool = True) -> keras.Model:
    """Build an embedding + stacked (Bi)LSTM/GRU classifier.

    Token id 0 is padding: the embedding masks it, so right-padded batches of any length give
    the same outputs, and cuDNN kernels can be used on GPU.

    Args:
        config: the hyperparameters.
        embeddings_initializer: initializer of the embedding table, e.g. a `keras.initializers.Constant`
            holding pretrained vectors of shape (vocabulary_size, embedding_dim). Default "uniform".
        trainable_embeddings: False freezes the embedding table.

    Returns:
        A `keras.Model` mapping int token ids `(batch, time)` to probabilities: `(batch, 1)`
        (sigmoid) when `num_classes == 2`, else `(batch, num_classes)` (softmax).

    Example:
        >>> model = build_rnn_classifier(RNNClassifierConfig(vocabulary_size=100, num_classes=3))
        >>> model.output_shape
        (None, 3)
    """
    if config.recurrent_dropout > 0:
        log.warning("recurrent_dropout=%s disables the cuDNN LSTM/GRU kernels on GPU", config.recurrent_dropout)

    # === Inputs ===
    token_ids = keras.Input(shape=(None,), dtype="int32", name="token_ids")

    # === Embedding (mask_zero: id 0 is padding) ===
    x = keras.layers.Embedding(config.vocabulary_size, config.embedding_dim, mask_zero=True,
                               embeddings_initializer=embeddings_initializer,
                               trainable=trainable_embeddings, name="embedding")(token_ids)

    # === Recurrent stack: every layer but the last returns the full sequence ===
    for i, units in enumerate(config.units):
        last = i == len(config.units) - 1
        layer = CELLS[config.cell](units, return_sequences=not last, dropout=config.dropout,
                                   recurrent_dropout=config.recurrent_dropout, name=f"{config.cell}_{i}")
        if config.bidirectional:
            layer = keras.layers.Bidirectional(layer, name=f"bidirectional_{i}")
        x = layer(x)

    # === Head (float32 even under mixed precision, for a stable loss) ===
    if config.dropout:
        x = keras.layers.Dropout(config.dropout, name="head_dropout")(x)
    binary = config.num_classes == 2
    probabilities = keras.layers.Dense(1 if binary else config.num_classes,
                                       activation="sigmoid" if binary else "softmax",
                                       dtype="float32", name="probabilities")(x)
    return keras.Model(token_ids, probabilities, name="rnn_classifier")
