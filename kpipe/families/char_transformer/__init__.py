"""The `char_transformer` model family: `config.py` (no TensorFlow) and `model.py` (the Keras builder)."""
