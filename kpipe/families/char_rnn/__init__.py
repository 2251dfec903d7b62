"""The `char_rnn` model family: character LSTM/GRU name generator, optionally conditioned on a category. `config.py`
holds its config (no TensorFlow), `model.py` its Keras builder; `SPEC` below is what the task registry lists."""

from kpipe.families.char_rnn.config import CharGeneratorConfig
from kpipe.families.spec import FamilySpec

SPEC = FamilySpec(
    "char_rnn",
    config=CharGeneratorConfig,
    builder="kpipe.families.char_rnn.model:build_char_generator",
    summary="character LSTM/GRU name generator, optionally conditioned on a category",
    decoder="kpipe.families.char_rnn.model:CharSampler",
    portable=True,
)
