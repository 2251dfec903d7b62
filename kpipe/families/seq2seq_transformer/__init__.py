"""Transformer encoder-decoder for translation (keras-hub layers); decoded by `seq2seq_attention.decoding`."""
