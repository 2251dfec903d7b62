"""The settings of the shared layers, without TensorFlow (configs import them before TensorFlow loads):
recurrent cell names, transformer sizes and the attention variants."""

from __future__ import annotations

import dataclasses

from kpipe.config.strict import check_choice, check_range

# Config name -> recurrent layer in keras.layers (kpipe.layers.recurrent_cells.CELLS looks them up there).
CELL_CLASSES = {"lstm": "LSTM", "gru": "GRU"}
POSITION_ENCODINGS = ("learned", "sine")
POOLINGS = ("mean", "cls")
ATTENTIONS = ("softmax", "linear", "random_features", "fmm")
LINEAR_ATTENTION_FEATURE_MAPS = ("elu", "relu")  # φ of LinearAttention: elu(x) + 1, or relu(x)
RANDOM_FEATURE_KERNELS = ("softmax", "gaussian")  # what RandomFeatureAttention's features approximate
RANDOM_FEATURE_REDRAWS = ("never", "every_step")


def check_transformer_sizes(config) -> None:
    """The sizes every transformer config has: positive, heads dividing the width, dropout in [0, 1)."""
    for name in ("hidden_dim", "num_layers", "num_heads", "intermediate_dim", "sequence_length"):
        check_range(name, getattr(config, name), low=1)
    if config.hidden_dim % config.num_heads:
        raise ValueError(f"`num_heads` must divide `hidden_dim` (each head gets hidden_dim / num_heads dimensions). "
                         f"Received: hidden_dim={config.hidden_dim}, num_heads={config.num_heads}")
    check_range("dropout", config.dropout, low=0.0, high=1.0, high_inclusive=False)


@dataclasses.dataclass(frozen=True, kw_only=True)
class AttentionSettings:
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

    attention: str = "softmax"
    feature_map: str = "elu"
    num_random_features: int = 64
    random_feature_kernel: str = "softmax"
    redraw: str = "never"
    band_width: int = 8
    fmm_rank: int = 2

    def check_attention(self) -> None:
        check_choice("attention", self.attention, ATTENTIONS)
        check_choice("feature_map", self.feature_map, LINEAR_ATTENTION_FEATURE_MAPS)
        check_range("num_random_features", self.num_random_features, low=1)
        check_choice("random_feature_kernel", self.random_feature_kernel, RANDOM_FEATURE_KERNELS)
        check_choice("redraw", self.redraw, RANDOM_FEATURE_REDRAWS)
        check_range("band_width", self.band_width, low=0)
        check_range("fmm_rank", self.fmm_rank, low=1, high=2)

    def attention_options(self) -> dict:
        """The chosen variant's settings, as its layer (`attention_variants.attention_layer`) takes them."""
        return {"softmax": {}, "linear": {"feature_map": self.feature_map},
                "random_features": {"num_features": self.num_random_features, "kernel": self.random_feature_kernel,
                                    "redraw": self.redraw},
                "fmm": {"band_width": self.band_width, "rank": self.fmm_rank}}[self.attention]
