"""The `char_rnn` family's config, without TensorFlow (parsed and checked before TensorFlow loads)."""

from __future__ import annotations

import dataclasses

from kpipe.config.constraints import Checked, at_least, fraction, layer_sizes, one_of, setting
from kpipe.layers.settings import CELL_CLASSES
from kpipe.tokens import CHARS

CONDITIONING = ("none", "initial_state", "every_step")


@dataclasses.dataclass(frozen=True, kw_only=True)
class CharGeneratorConfig(Checked):
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

    family: str = setting("char_rnn", one_of(("char_rnn",)))
    embedding_dim: int = setting(32, at_least(1))
    cell: str = setting("lstm", one_of(CELL_CLASSES))
    units: tuple[int, ...] = setting((128,), layer_sizes())
    dropout: float = setting(0.0, fraction())
    conditioning: str = setting("initial_state", one_of(CONDITIONING))
    category_dim: int = setting(16, at_least(1))
    vocabulary_size: int = setting(64, at_least(CHARS.count + 1), derived=True)
    num_categories: int = setting(1, at_least(1), derived=True)
