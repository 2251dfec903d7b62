"""The `rnn_tagger` family's config, without TensorFlow (parsed and checked before TensorFlow loads)."""

from __future__ import annotations

import dataclasses

from kpipe.config.constraints import Checked, at_least, fraction, layer_sizes, one_of, setting
from kpipe.layers.settings import CELL_CLASSES

TAGGER_OUTPUTS = ("softmax", "crf")
CHAR_FEATURES = ("cnn", "lstm", "none")


@dataclasses.dataclass(frozen=True, kw_only=True)
class RNNTaggerConfig(Checked):
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

    family: str = setting("rnn_tagger", one_of(("rnn_tagger",)))
    embedding_dim: int = setting(100, at_least(1))
    pretrained_embeddings: str = ""
    embedding_training: str = setting("trainable", one_of(("trainable", "frozen")))
    char_features: str = setting("cnn", one_of(CHAR_FEATURES))
    char_embedding_dim: int = setting(25, at_least(1))
    char_units: int = setting(30, at_least(1))
    char_window: int = setting(3, at_least(1))
    casing: bool = True
    casing_dim: int = setting(8, at_least(1))
    cell: str = setting("lstm", one_of(CELL_CLASSES))
    units: tuple[int, ...] = setting((100,), layer_sizes())
    dropout: float = setting(0.5, fraction())
    output: str = setting("crf", one_of(TAGGER_OUTPUTS))
    vocabulary_size: int = setting(20000, at_least(2), derived=True)
    char_vocabulary_size: int = setting(100, at_least(2), derived=True)
    num_tags: int = setting(9, at_least(2), derived=True)
