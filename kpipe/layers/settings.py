"""The settings of the shared layers, without TensorFlow (configs import them before TensorFlow loads):
recurrent cell names, transformer sizes and the attention variants."""

from __future__ import annotations

import dataclasses

from kpipe.config.constraints import Checked, at_least, between, fraction, one_of, setting

# Config name -> recurrent layer in keras.layers (kpipe.layers.recurrent_cells.CELLS looks them up there).
CELL_CLASSES = {"lstm": "LSTM", "gru": "GRU"}
POSITION_ENCODINGS = ("learned", "sine")
POOLINGS = ("mean", "cls")
ATTENTIONS = ("softmax", "linear", "random_features", "fmm")
LINEAR_ATTENTION_FEATURE_MAPS = ("elu", "relu")  # φ of LinearAttention: elu(x) + 1, or relu(x)
RANDOM_FEATURE_KERNELS = ("softmax", "gaussian")  # what RandomFeatureAttention's features approximate
RANDOM_FEATURE_REDRAWS = ("never", "every_step")


def check_heads_divide_width(config) -> None:
    """The rule every transformer config with `hidden_dim` and `num_heads` shares (its sizes' ranges are declared
    on its fields)."""
    if config.hidden_dim % config.num_heads:
        raise ValueError(f"`num_heads` must divide `hidden_dim` (each head gets hidden_dim / num_heads dimensions). "
                         f"Received: hidden_dim={config.hidden_dim}, num_heads={config.num_heads}")


@dataclasses.dataclass(frozen=True, kw_only=True)
class TransformerSizes(Checked):
    """The sizes of a transformer stack, named alike in every transformer config (the translator's two stacks name
    their depths `encoder_layers` and `decoder_layers` beside the same `hidden_dim`, `num_heads`, `intermediate_dim`
    and `dropout`).

    Args:
        hidden_dim: width of the embeddings and of every layer.
        num_layers: stacked layers.
        num_heads: attention heads per layer; must divide hidden_dim.
        intermediate_dim: width of each layer's feed-forward block.
        dropout: dropout in the layers and on the embeddings.
    """

    hidden_dim: int = setting(128, at_least(1))
    num_layers: int = setting(2, at_least(1))
    num_heads: int = setting(4, at_least(1))
    intermediate_dim: int = setting(512, at_least(1))
    dropout: float = setting(0.1, fraction())

    def __post_init__(self):
        super().__post_init__()
        check_heads_divide_width(self)


@dataclasses.dataclass(frozen=True, kw_only=True)
class AttentionSettings(Checked):
    """The attention variant of a transformer config, and the settings of each variant.

    Args:
        attention: "softmax" (keras-hub's layers), "linear" (`LinearAttention`: a kernel feature map instead of
            the softmax, O(N) in the sequence length; Katharopoulos et al. 2020), "random_features"
            (`RandomFeatureAttention`: positive random features estimating the softmax kernel, O(N); Performer)
            or "fmm" (`FMMAttention`: banded softmax + low-rank linear attention, O(N); FMMformer).
        feature_map: the linear attention's φ: "elu" (elu + 1) or "relu".
        num_random_features, random_feature_kernel, redraw: random-feature attention's number of features
            per head, kernel ("softmax" or "gaussian") and redraw policy ("never" or "every_step").
        band_width, fmm_rank: FMM attention's near-field half-width and far-field rank (1 or 2).
    """

    attention: str = setting("softmax", one_of(ATTENTIONS))
    feature_map: str = setting("elu", one_of(LINEAR_ATTENTION_FEATURE_MAPS))
    num_random_features: int = setting(64, at_least(1))
    random_feature_kernel: str = setting("softmax", one_of(RANDOM_FEATURE_KERNELS))
    redraw: str = setting("never", one_of(RANDOM_FEATURE_REDRAWS))
    band_width: int = setting(8, at_least(0))
    fmm_rank: int = setting(2, between(1, 2))

    def attention_options(self) -> dict:
        """The chosen variant's settings, as its layer (`attention_variants.attention_layer`) takes them."""
        return {"softmax": {}, "linear": {"feature_map": self.feature_map},
                "random_features": {"num_features": self.num_random_features, "kernel": self.random_feature_kernel,
                                    "redraw": self.redraw},
                "fmm": {"band_width": self.band_width, "rank": self.fmm_rank}}[self.attention]
