"""The `sentence_encoder` model family: a pretrained encoder's pooled vectors (the embed task). `config.py` holds
its config (no TensorFlow), `model.py` its Keras builder; `SPEC` below is what the task registry lists."""

from kpipe.families.sentence_encoder.config import SentenceEncoderConfig
from kpipe.families.spec import FamilySpec

SPEC = FamilySpec(
    "sentence_encoder",
    config=SentenceEncoderConfig,
    builder="kpipe.families.sentence_encoder.model:build_sentence_encoder",
    summary="a pretrained encoder's pooled vectors (the embed task)",
)
