"""The `sentence_encoder` family's config, without TensorFlow (parsed and checked before TensorFlow loads)."""

from __future__ import annotations

import dataclasses

from kpipe.config.strict import check_choice
from kpipe.layers.settings import POOLINGS


@dataclasses.dataclass(frozen=True, kw_only=True)
class SentenceEncoderConfig:
    """A pretrained encoder used as it is, for sentence embeddings (`kpipe.pretrained.encoder`): nothing trains.

    Args:
        family: always "sentence_encoder".
        preset: the encoder, as `PretrainedClassifierConfig.preset` (a keras-hub preset name, an "hf://" or
            "kaggle://" handle, or a local keras-hub or Hugging Face folder).
        pooling: "mean" (masked mean of the last layer, what sentence-transformer checkpoints are trained
            with) or "cls" (the backbone's pooled [CLS] output).
        normalize: scale every embedding to unit length (sentence-transformers' `Normalize`), so a dot
            product is the cosine similarity.
    """

    family: str = "sentence_encoder"
    preset: str = "all_minilm_l6_v2_en"
    pooling: str = "mean"
    normalize: bool = True

    def __post_init__(self):
        check_choice("family", self.family, ("sentence_encoder",))
        check_choice("pooling", self.pooling, POOLINGS)
