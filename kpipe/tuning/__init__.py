"""Hyperparameter search over any pipeline (`kpipe tune`), with Optuna: every trial is a real kpipe run.

    space.py   the search space: a [tune] table (config path -> choices or a range), validated strictly
    study.py   the study in a database (SQLite by default), trials as runs, pruning, the report
"""
