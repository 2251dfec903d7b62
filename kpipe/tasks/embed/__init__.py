"""Sentence embeddings from a pretrained encoder: `run.py` (the linear probe), `serving.py` (the `embed` signature)."""
