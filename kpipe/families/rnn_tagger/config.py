"""The `rnn_tagger` family's config, without TensorFlow (parsed and checked before TensorFlow loads)."""

from __future__ import annotations

import dataclasses

from kpipe.config.strict import DERIVED, check_choice, check_layer_sizes, check_range
from kpipe.layers.settings import CELL_CLASSES

TAGGER_OUTPUTS = ("softmax", "crf")
CHAR_FEATURES = ("cnn", "lstm", "none")
# padding, numeric, holds a digit, all lower, all upper, initial upper, other (kpipe.preprocessing.tagging)
CASING_CLASSES = 7


@dataclasses.dataclass(frozen=True, kw_only=True)
class RNNTaggerConfig:
    """Hyperparameters of `build_rnn_tagger`: a word's embedding (GloVe-initialisable), its characters and its
    casing, a (Bi)LSTM over the sentence, and a tag per word from a softmax or a linear-chain CRF (Lample et al.
    2016; Ma and Hovy 2016 for the character CNN).

    Args:
        family: always "rnn_tagger".
        embedding_dim: size of the word embedding (the vectors' size with `pretrained_embeddings`).
        pretrained_embeddings: word vectors to start from ("glove:6B.50d", or a GloVe/word2vec text file); "" learns
            them from scratch. GloVe's words are lower-cased: the characters and the casing give back what that
            loses.
        embedding_training: "trainable" (fine-tune the vectors) or "frozen".
        char_features: each word's characters as a feature: "cnn" (a convolution max-pooled over the word), "lstm"
            (a character BiLSTM, its final states) or "none".
        char_embedding_dim: size of the character embedding.
        char_units: filters of the character CNN, or units per direction of the character BiLSTM.
        char_window: width of the character CNN's filters.
        casing: add an embedding of the word's casing (all lower, initial upper, all upper, numeric, ...).
        casing_dim: size of that embedding.
        cell: "lstm" or "gru".
        units: units per direction of each stacked recurrent layer, bottom first.
        dropout: dropout on the word features and on the recurrent stack's outputs.
        output: "softmax" (each word's tag alone) or "crf" (the best sequence of tags, Viterbi).
        vocabulary_size, char_vocabulary_size, num_tags: set by kpipe from the data.
    """

    family: str = "rnn_tagger"
    embedding_dim: int = 100
    pretrained_embeddings: str = ""
    embedding_training: str = "trainable"
    char_features: str = "cnn"
    char_embedding_dim: int = 25
    char_units: int = 30
    char_window: int = 3
    casing: bool = True
    casing_dim: int = 8
    cell: str = "lstm"
    units: tuple[int, ...] = (100,)
    dropout: float = 0.5
    output: str = "crf"
    vocabulary_size: int = dataclasses.field(default=20000, metadata=DERIVED)
    char_vocabulary_size: int = dataclasses.field(default=100, metadata=DERIVED)
    num_tags: int = dataclasses.field(default=9, metadata=DERIVED)

    def __post_init__(self):
        check_choice("family", self.family, ("rnn_tagger",))
        check_range("embedding_dim", self.embedding_dim, low=1)
        check_choice("embedding_training", self.embedding_training, ("trainable", "frozen"))
        check_choice("char_features", self.char_features, CHAR_FEATURES)
        check_range("char_embedding_dim", self.char_embedding_dim, low=1)
        check_range("char_units", self.char_units, low=1)
        check_range("char_window", self.char_window, low=1)
        check_range("casing_dim", self.casing_dim, low=1)
        check_choice("cell", self.cell, CELL_CLASSES)
        check_layer_sizes("units", self.units)
        check_range("dropout", self.dropout, low=0.0, high=1.0, high_inclusive=False)
        check_choice("output", self.output, TAGGER_OUTPUTS)
        check_range("vocabulary_size", self.vocabulary_size, low=2)
        check_range("char_vocabulary_size", self.char_vocabulary_size, low=2)
        check_range("num_tags", self.num_tags, low=2)
