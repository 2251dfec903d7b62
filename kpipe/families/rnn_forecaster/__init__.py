"""The `rnn_forecaster` model family: windows -> linear autoregression + recurrent correction (+ seasonal baseline).
`config.py` holds its config (no TensorFlow), `model.py` its Keras builder; `SPEC` below is what the task registry
lists."""

from kpipe.families.rnn_forecaster.config import RNNForecasterConfig
from kpipe.families.spec import FamilySpec

SPEC = FamilySpec(
    "rnn_forecaster",
    config=RNNForecasterConfig,
    builder="kpipe.families.rnn_forecaster.model:build_rnn_forecaster",
    summary="windows -> linear autoregression + recurrent correction (+ seasonal baseline)",
    portable=True,
)
