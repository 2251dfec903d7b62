"""Vectors: word vectors (GloVe, word2vec files) and their cache, sentence embeddings from exports,
and 2-D maps of both.
"""
