"""The `seq2seq_attention` model family: `config.py` (no TensorFlow) and `model.py` (the Keras builder)."""
