"""The `char_transformer` model family: character transformer name generator. `config.py` holds its config (no
TensorFlow), `model.py` its Keras builder; `SPEC` below is what the task registry lists."""

from kpipe.families.char_transformer.config import CharTransformerConfig
from kpipe.families.spec import FamilySpec

SPEC = FamilySpec(
    "char_transformer",
    config=CharTransformerConfig,
    builder="kpipe.families.char_transformer.model:build_char_transformer",
    summary="character transformer name generator",
    decoder="kpipe.families.char_transformer.model:CharTransformerSampler",
    portable=True,
)
