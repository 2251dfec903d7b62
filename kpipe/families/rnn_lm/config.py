"""The `rnn_lm` family's config, without TensorFlow (parsed and checked before TensorFlow loads)."""

from __future__ import annotations

import dataclasses

from kpipe.config.strict import DERIVED, check_choice, check_layer_sizes, check_range
from kpipe.layers.settings import CELL_CLASSES


@dataclasses.dataclass(frozen=True, kw_only=True)
class RNNLanguageModelConfig:
    """Hyperparameters of `build_rnn_lm` (PyTorch's word-language-model example: embedding, stacked LSTM, dropout
    on the embeddings, between layers and before the output, the output tied to the embedding).

    Args:
        family: always "rnn_lm".
        embedding_dim: width of the token embedding.
        cell: "lstm" or "gru".
        units: units of each stacked recurrent layer, bottom first.
        dropout: dropout on the embeddings, after every recurrent layer and before the output.
        tie_weights: the output layer is the token embedding read in reverse (Press & Wolf 2017); when the last
            layer's units differ from embedding_dim, a linear layer maps them to it first.
        vocabulary_size: set by kpipe from the tokenizer.
    """

    family: str = "rnn_lm"
    embedding_dim: int = 256
    cell: str = "lstm"
    units: tuple[int, ...] = (256, 256)
    dropout: float = 0.2
    tie_weights: bool = True
    vocabulary_size: int = dataclasses.field(default=8000, metadata=DERIVED)

    def __post_init__(self):
        check_choice("family", self.family, ("rnn_lm",))
        check_range("embedding_dim", self.embedding_dim, low=1)
        check_choice("cell", self.cell, CELL_CLASSES)
        check_layer_sizes("units", self.units)
        check_range("dropout", self.dropout, low=0.0, high=1.0, high_inclusive=False)
        check_range("vocabulary_size", self.vocabulary_size, low=2)
