"""Sentence embeddings from a pretrained encoder: `run.py` (the linear probe), `signatures.py` (the `embed`
signature)."""
