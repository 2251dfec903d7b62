"""The `pretrained_reader` family's config, without TensorFlow (parsed and checked before TensorFlow loads)."""

from __future__ import annotations

import dataclasses

from kpipe.config.constraints import Checked, fraction, one_of, setting

READER_TRAINING = ("trainable", "frozen")


@dataclasses.dataclass(frozen=True, kw_only=True)
class PretrainedReaderConfig(Checked):
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

    family: str = setting("pretrained_reader", one_of(("pretrained_reader",)))
    preset: str = "all_minilm_l6_v2_en"
    dropout: float = setting(0.1, fraction())
    backbone_training: str = setting("trainable", one_of(READER_TRAINING))
