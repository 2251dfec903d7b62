"""Forecasting pieces shared by the forecast task: baselines and error metrics."""
