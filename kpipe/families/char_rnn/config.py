"""The `char_rnn` family's config, without TensorFlow (parsed and checked before TensorFlow loads)."""

from __future__ import annotations

import dataclasses

from kpipe.config.strict import DERIVED, check_choice, check_layer_sizes, check_range
from kpipe.layers.settings import CELL_CLASSES
from kpipe.tokens import CHARS

CONDITIONING = ("none", "initial_state", "every_step")


@dataclasses.dataclass(frozen=True, kw_only=True)
class CharGeneratorConfig:
    """Hyperparameters of `build_char_generator`.

    Args:
        family: always "char_rnn".
        embedding_dim: size of the character embedding.
        cell: "lstm" or "gru".
        units: units of each stacked recurrent layer, bottom first.
        dropout: dropout on the recurrent layers' inputs and before the output layer.
        conditioning: how the category enters: "initial_state" (its embedding, through a Dense layer,
            is the first layer's initial state), "every_step" (its embedding joins every character's)
            or "none".
        category_dim: size of the category embedding.
        vocabulary_size: token ids, special tokens included (set by kpipe from the training names).
        num_categories: number of categories (set by kpipe from the data; 1 when there are none).
    """

    family: str = "char_rnn"
    embedding_dim: int = 32
    cell: str = "lstm"
    units: tuple[int, ...] = (128,)
    dropout: float = 0.0
    conditioning: str = "initial_state"
    category_dim: int = 16
    vocabulary_size: int = dataclasses.field(default=64, metadata=DERIVED)
    num_categories: int = dataclasses.field(default=1, metadata=DERIVED)

    def __post_init__(self):
        check_choice("family", self.family, ("char_rnn",))
        check_range("embedding_dim", self.embedding_dim, low=1)
        check_choice("cell", self.cell, CELL_CLASSES)
        check_layer_sizes("units", self.units)
        check_range("dropout", self.dropout, low=0.0, high=1.0, high_inclusive=False)
        check_choice("conditioning", self.conditioning, CONDITIONING)
        check_range("category_dim", self.category_dim, low=1)
        check_range("vocabulary_size", self.vocabulary_size, low=CHARS.count + 1)
        check_range("num_categories", self.num_categories, low=1)
