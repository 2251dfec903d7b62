"""The `rnn_tagger` model family: word, character and casing features -> (Bi)LSTM -> a tag per word (softmax or
CRF). `config.py` holds its config (no TensorFlow), `model.py` its Keras builder; `SPEC` below is what the task
registry lists."""

from kpipe.families.rnn_tagger.config import RNNTaggerConfig
from kpipe.families.spec import FamilySpec

SPEC = FamilySpec(
    "rnn_tagger",
    config=RNNTaggerConfig,
    builder="kpipe.families.rnn_tagger.model:build_rnn_tagger",
    portable=True,
    summary="word (GloVe-initialisable), character and casing features -> (Bi)LSTM -> a tag per word, softmax or "
            "linear-chain CRF",
)
