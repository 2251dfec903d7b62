"""The `rnn_lm` model family: an LSTM/GRU language model over the same byte-level BPE tokens as `gpt` (the recurrent
half of the notes; PyTorch's word-language-model example is its reference). `config.py` holds its config (no
TensorFlow), `model.py` its builder and its decoder; `SPEC` below is what the task registry lists."""

from kpipe.families.rnn_lm.config import RNNLanguageModelConfig
from kpipe.families.spec import FamilySpec

SPEC = FamilySpec(
    "rnn_lm",
    config=RNNLanguageModelConfig,
    builder="kpipe.families.rnn_lm.model:build_rnn_lm",
    summary="token embedding -> stacked LSTM/GRU -> the next token, output tied to the input embedding; generation "
            "carries the recurrent state (constant cost per token)",
    decoder="kpipe.families.rnn_lm.model:RecurrentDecoder",
    portable=True,
)
