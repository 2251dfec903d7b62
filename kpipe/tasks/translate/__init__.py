"""Sequence to sequence (g2p, sentence translation): `run.py` trains, `validation.py` decodes and scores,
`signatures.py` is the export's `translate` signature, `predict.py` translates with an export (no training code)."""

