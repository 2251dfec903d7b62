"""The `rnn_forecaster` model family: `config.py` (no TensorFlow) and `model.py` (the Keras builder)."""
