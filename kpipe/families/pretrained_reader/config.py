"""The `pretrained_reader` family's config, without TensorFlow (parsed and checked before TensorFlow loads)."""

from __future__ import annotations

import dataclasses

from kpipe.config.strict import check_choice, check_range

READER_TRAINING = ("trainable", "frozen")


@dataclasses.dataclass(frozen=True, kw_only=True)
class PretrainedReaderConfig:
    """Hyperparameters of `build_pretrained_reader`: a pretrained encoder (loaded with keras-hub's `from_preset`)
    with a start and an end logit per word piece.

    Args:
        family: always "pretrained_reader".
        preset: the encoder, as for `pretrained_classifier`: a keras-hub preset name, an "hf://" or "kaggle://"
            handle, or a local folder in keras-hub's preset format or Hugging Face format. Its tokenizer must be
            WordPiece (BERT's family: BERT, DistilBERT, ELECTRA, MiniLM), whose offsets kpipe computes.
        dropout: dropout on the encoder's output, before the start/end projection.
        backbone_training: "trainable" (fine-tune everything) or "frozen" (train the projection only).
    """

    family: str = "pretrained_reader"
    preset: str = "all_minilm_l6_v2_en"
    dropout: float = 0.1
    backbone_training: str = "trainable"

    def __post_init__(self):
        check_choice("family", self.family, ("pretrained_reader",))
        check_range("dropout", self.dropout, low=0.0, high=1.0, high_inclusive=False)
        check_choice("backbone_training", self.backbone_training, READER_TRAINING)
