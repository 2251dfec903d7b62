"""The `rnn_lm` family's config, without TensorFlow (parsed and checked before TensorFlow loads)."""

from __future__ import annotations

import dataclasses

from kpipe.config.constraints import Checked, at_least, fraction, layer_sizes, one_of, setting
from kpipe.layers.settings import CELL_CLASSES


@dataclasses.dataclass(frozen=True, kw_only=True)
class RNNLanguageModelConfig(Checked):
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

    family: str = setting("rnn_lm", one_of(("rnn_lm",)))
    embedding_dim: int = setting(256, at_least(1))
    cell: str = setting("lstm", one_of(CELL_CLASSES))
    units: tuple[int, ...] = setting((256, 256), layer_sizes())
    dropout: float = setting(0.2, fraction())
    tie_weights: bool = True
    vocabulary_size: int = setting(8000, at_least(2), derived=True)
