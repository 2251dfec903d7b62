"""The `rnn_classifier` model family: embedding (or GloVe) -> (Bi)LSTM/GRU stack -> pooling -> head; siamese for
pairs. `config.py` holds its config (no TensorFlow), `model.py` its Keras builder; `SPEC` below is what the task
registry lists."""

from kpipe.families.rnn_classifier.config import RNNClassifierConfig
from kpipe.families.spec import FamilySpec

SPEC = FamilySpec(
    "rnn_classifier",
    config=RNNClassifierConfig,
    builder="kpipe.families.rnn_classifier.model:build_rnn_classifier",
    summary="embedding (or GloVe) -> (Bi)LSTM/GRU stack -> pooling -> head; siamese for pairs",
    portable=True,
    shards=True,
    ensemble_member=True,
)
