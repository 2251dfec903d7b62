"""word2vec: `run.py` trains, `signatures.py` writes the vectors and the `embed` signature."""
