"""Character-level name generation: `run.py` trains, `signatures.py` is the export's `generate` signature, `predict.py`
samples from an export (no training code)."""
