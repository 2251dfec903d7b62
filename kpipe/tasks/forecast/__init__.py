"""Forecasting: `run.py` trains (its other stages in `stages.py`), `signatures.py` is the export's signature,
`predict.py` forecasts from an export (no training code)."""

FEATURES_FILE = "features.json"  # the input columns, horizon and intervals of the export
