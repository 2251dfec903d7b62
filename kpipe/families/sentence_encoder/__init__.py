"""The `sentence_encoder` model family: `config.py` (no TensorFlow) and `model.py` (the Keras builder)."""
