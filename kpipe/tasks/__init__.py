"""The tasks: one folder each (run.py, the stages of a run; signatures.py, the export's signatures; predict.py,
answering with an export), the task registry (registry.py), the named pipelines (named_pipelines.py) and `run_pipeline`
(runner.py). Nothing is imported here, so answering with an export loads no training code."""
