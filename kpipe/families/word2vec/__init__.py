"""The `word2vec` model family: `config.py` (no TensorFlow) and `model.py` (the Keras builder)."""
