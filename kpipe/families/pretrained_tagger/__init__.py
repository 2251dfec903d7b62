"""The `pretrained_tagger` model family: a keras-hub / Hugging Face encoder over a sentence's word pieces, each word
read at its first piece, a tag per word (softmax or CRF). `config.py` holds its config (no TensorFlow), `model.py`
its builder; `SPEC` below is what the task registry lists."""

from kpipe.families.pretrained_tagger.config import PretrainedTaggerConfig
from kpipe.families.spec import FamilySpec

SPEC = FamilySpec(
    "pretrained_tagger",
    config=PretrainedTaggerConfig,
    builder="kpipe.families.pretrained_tagger.model:build_pretrained_tagger",
    summary="a keras-hub / Hugging Face encoder (its layers chosen or combined as features) read at each word's "
            "first word piece, long sentences in overlapping windows -> a tag per word, softmax or CRF",
)
