"""The `seq2seq_attention` model family: GRU/LSTM encoder-decoder with Bahdanau attention; greedy and beam decoding.
`config.py` holds its config (no TensorFlow), `model.py` its Keras builder; `SPEC` below is what the task registry
lists."""

from kpipe.families.seq2seq_attention.config import Seq2SeqConfig
from kpipe.families.spec import FamilySpec

SPEC = FamilySpec(
    "seq2seq_attention",
    config=Seq2SeqConfig,
    builder="kpipe.families.seq2seq_attention.model:build_seq2seq",
    summary="GRU/LSTM encoder-decoder with Bahdanau attention; greedy and beam decoding",
    decoder="kpipe.families.seq2seq_attention.model:Seq2SeqParts",
)
