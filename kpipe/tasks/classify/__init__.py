"""Text classification: `run.py` runs the stages, `members.py` trains each family, `ensemble.py` weighs members,
`baselines.py` fits the baselines, `signatures.py` writes the export, `predict.py` classifies with an export (no
training code)."""

MULTI_LABEL_FILE = "multi_label.json"  # label names, thresholds and separator of a multi-label export
