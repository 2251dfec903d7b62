"""Character-level name generation: `run.py` trains, `serving.py` is the export's `generate` signature, `predict.py`
samples from an export (no training code)."""
