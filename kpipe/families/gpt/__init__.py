"""The `gpt` model family: a causal transformer language model (GPT-2's shape, keras-hub's layers). `config.py`
holds its config (no TensorFlow), `model.py` its builder, `decoding.py` its generation; `SPEC` below is what the task registry lists."""

from kpipe.families.gpt.config import GPTConfig
from kpipe.families.spec import FamilySpec

SPEC = FamilySpec(
    "gpt",
    config=GPTConfig,
    builder="kpipe.families.gpt.model:build_gpt",
    decoder="kpipe.families.gpt.decoding:gpt_decoder",
    portable=True,
    summary="token and position embeddings -> causal decoder blocks (keras-hub GPT-2) -> the next token, output tied "
            "to the input embedding; softmax attention generating with key/value caches, or linear attention with "
            "a recurrent state",
)
