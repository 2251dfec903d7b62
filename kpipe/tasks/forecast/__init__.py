"""Forecasting: `run.py` trains (its other stages in `stages.py`), `signatures.py` is the export's signature,
`predict.py` forecasts from an export (no training code)."""

