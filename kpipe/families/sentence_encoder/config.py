"""The `sentence_encoder` family's config, without TensorFlow (parsed and checked before TensorFlow loads)."""

from __future__ import annotations

import dataclasses

from kpipe.config.constraints import Checked, one_of, setting
from kpipe.layers.settings import POOLINGS


@dataclasses.dataclass(frozen=True, kw_only=True)
class SentenceEncoderConfig(Checked):
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

    family: str = setting("sentence_encoder", one_of(("sentence_encoder",)))
    preset: str = "all_minilm_l6_v2_en"
    pooling: str = setting("mean", one_of(POOLINGS))
    normalize: bool = True
