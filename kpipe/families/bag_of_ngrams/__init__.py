"""The `bag_of_ngrams` model family: `config.py` (no TensorFlow) and `model.py` (the Keras builder)."""
