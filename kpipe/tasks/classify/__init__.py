"""Text classification: `run.py` runs the stages, `members.py` is what a trained family gives (a `Member`) and sends
each family to its trainer (`train_ngrams.py`, `train_sequence.py`, `train_pretrained.py`, as the task registry
lists them), `ensemble.py` weighs members, `baselines.py` fits the baselines, `signatures.py` writes the export,
`predict.py` classifies with an export (no training code)."""

