"""The code of each task: data -> model -> training -> evaluation -> export. The registry of tasks
(config types, families, rules) is `kpipe.config.tasks.TASKS`, which loads a task's module when it runs."""

from __future__ import annotations

from kpipe.config.pipeline import PipelineConfig, RunResult
from kpipe.config.pipelines import check_runnable
from kpipe.config.tasks import TASKS


def run_pipeline(config: PipelineConfig) -> RunResult:
    """Run a pipeline end to end; returns the task's result (export folder and metrics)."""
    from kpipe.training.loop import make_strategy

    check_runnable(config)
    if config.training.strategy in ("auto", "multi_worker", "tpu"):
        # A multi-worker strategy must exist before TensorFlow runs anything (loading data does);
        # a missing TPU is reported before the data is loaded.
        make_strategy(config.training.strategy, worker_timeout_s=config.training.worker_timeout_s)
    return TASKS[config.task].run(config)
