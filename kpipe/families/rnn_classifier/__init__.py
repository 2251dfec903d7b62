"""The `rnn_classifier` model family: `config.py` (no TensorFlow) and `model.py` (the Keras builder)."""
