"""Evaluation beside the model: the simple baselines a user would pick instead, on the same split."""
