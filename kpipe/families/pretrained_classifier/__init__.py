"""The `pretrained_classifier` model family: a keras-hub / Hugging Face encoder fine-tuned with a head. `config.py`
holds its config (no TensorFlow), `model.py` its Keras builder; `SPEC` below is what the task registry lists."""

from kpipe.families.pretrained_classifier.config import PretrainedClassifierConfig
from kpipe.families.spec import FamilySpec

SPEC = FamilySpec(
    "pretrained_classifier",
    config=PretrainedClassifierConfig,
    builder="kpipe.families.pretrained_classifier.model:build_pretrained_classifier",
    summary="a keras-hub / Hugging Face encoder fine-tuned with a head",
    portable=True,
    shards=True,
    ensemble_member=True,
)
