"""word2vec: `run.py` trains, `serving.py` writes the vectors and the `embed` signature."""
