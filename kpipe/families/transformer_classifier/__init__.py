"""The `transformer_classifier` model family: token + position embedding -> transformer encoder -> pooling -> head.
`config.py` holds its config (no TensorFlow), `model.py` its Keras builder; `SPEC` below is what the task registry
lists."""

from kpipe.families.spec import FamilySpec
from kpipe.families.transformer_classifier.config import TransformerClassifierConfig

SPEC = FamilySpec(
    "transformer_classifier",
    config=TransformerClassifierConfig,
    builder="kpipe.families.transformer_classifier.model:build_transformer_classifier",
    summary="token + position embedding -> transformer encoder -> pooling -> head",
    portable=True,
    shards=True,
)
