"""The `pretrained_reader` model family: a keras-hub / Hugging Face encoder fine-tuned to point at an answer's start
and end in a context. `config.py` holds its config (no TensorFlow), `model.py` its builder; `SPEC` below is what the
task registry lists."""

from kpipe.families.pretrained_reader.config import PretrainedReaderConfig
from kpipe.families.spec import FamilySpec

SPEC = FamilySpec(
    "pretrained_reader",
    config=PretrainedReaderConfig,
    builder="kpipe.families.pretrained_reader.model:build_pretrained_reader",
    summary="a keras-hub / Hugging Face encoder over [CLS] question [SEP] context window [SEP] -> a start and an end "
            "logit per word piece",
    portable=True,
)
