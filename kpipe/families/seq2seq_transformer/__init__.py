"""The `seq2seq_transformer` model family: transformer encoder-decoder (keras-hub layers), decoded as
seq2seq_attention. `config.py` holds its config (no TensorFlow), `model.py` its Keras builder; `SPEC` below is what
the task registry lists."""

from kpipe.families.seq2seq_transformer.config import Seq2SeqTransformerConfig
from kpipe.families.spec import FamilySpec

SPEC = FamilySpec(
    "seq2seq_transformer",
    config=Seq2SeqTransformerConfig,
    builder="kpipe.families.seq2seq_transformer.model:build_seq2seq_transformer",
    summary="transformer encoder-decoder (keras-hub layers), decoded as seq2seq_attention",
    decoder="kpipe.families.seq2seq_transformer.model:TransformerParts",
)
