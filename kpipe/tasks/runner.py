"""`run_pipeline`: a validated config in, the task's run (train, evaluate, export) out."""

from __future__ import annotations

from kpipe.config.pipeline import PipelineConfig, RunResult
from kpipe.tasks.named_pipelines import check_runnable
from kpipe.tasks.registry import TASKS


def run_pipeline(config: PipelineConfig) -> RunResult:
    """Run a pipeline end to end; returns the task's result (export folder and metrics)."""
    from kpipe.training.loop import make_strategy

    check_runnable(config)
    if config.training.strategy in ("auto", "multi_worker", "tpu"):
        # A multi-worker strategy must exist before TensorFlow runs anything (loading data does);
        # a missing TPU is reported before the data is loaded.
        make_strategy(config.training.strategy, worker_timeout_s=config.training.worker_timeout_s)
    return TASKS[config.task].run(config)
