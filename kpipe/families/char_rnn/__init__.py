"""The `char_rnn` model family: `config.py` (no TensorFlow) and `model.py` (the Keras builder)."""
