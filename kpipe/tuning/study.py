"""`kpipe tune`: an Optuna study whose trials are kpipe runs, kept in a database so that it resumes after a
kill and several processes (or machines) can work on it at once.

Each trial is `kpipe run PIPELINE` with the trial's overrides, exported into the study's folder
(`<export.dir>/<pipeline>/tune/trials/<number>/`), scored on the task's validation figure at the epoch the
run keeps (never on test). After every epoch the figure is reported to the pruner, which stops trials
that fall behind the others at the same epoch. A killed process's trial is marked failed by the next
process once its heartbeat is older than the grace period (or, killed before its first heartbeat, once that
process has seen it without one for the grace period), and the study goes on.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import sys
import time
import warnings
from pathlib import Path
from typing import Iterable

import filelock

from kpipe.tasks.named_pipelines import load_pipeline
from kpipe.tasks.registry import TASKS
from kpipe.errors import ConfigError
from kpipe.redact import mask_passwords
from kpipe.tuning.orphans import OrphanWatch
from kpipe.tuning.space import Dimension, check_space, default_params, load_space

log = logging.getLogger(__name__)

SAMPLERS = ("tpe", "random", "grid")
PRUNERS = ("median", "successive_halving", "hyperband", "none")
# A trial whose process has been silent for the grace period died: marked failed (a paused process too: see
# `_optimize`). Both can be set (--heartbeat-seconds, --grace-seconds) for tuners that pause for long.
HEARTBEAT_SECONDS, GRACE_SECONDS = 2, 6
STORAGE_VARIABLE = "KPIPE_TUNE_STORAGE"  # the database URL, when not given with --storage (keeps it off `ps`)
TRIALS = "trials"  # <study folder>/trials/<number>/<pipeline>/<version>: each trial's export


@dataclasses.dataclass(frozen=True)
class TuneOptions:
    """How `tune_pipeline` searches: trials to finish (with every process on the study), a time limit for this
    process, the space file, the database, the sampler and the pruner."""

    trials: int = 20
    timeout: float | None = None
    space: str | None = None
    storage: str | None = None
    sampler: str = "tpe"
    pruner: str = "median"
    prune_after: int = 1   # the earliest epoch a trial can be stopped at
    include_defaults: bool = False   # a first trial with the pipeline's own values, to compare the others with
    seed: int = 0
    export_best: bool = False
    heartbeat_seconds: float = HEARTBEAT_SECONDS
    grace_seconds: float = GRACE_SECONDS

    def __post_init__(self):
        if self.trials < 1:
            raise ConfigError(f"--trials must be at least 1. Received: {self.trials}")
        if self.timeout is not None and self.timeout <= 0:
            raise ConfigError(f"--timeout must be > 0 seconds. Received: {self.timeout}")
        if self.prune_after < 1:
            raise ConfigError(f"--prune-after must be at least 1 epoch. Received: {self.prune_after}")
        if not self.heartbeat_seconds >= 1 or not self.grace_seconds > self.heartbeat_seconds:
            raise ConfigError("--heartbeat-seconds must be at least 1 and --grace-seconds above it. Received: "
                              f"{self.heartbeat_seconds:g} and {self.grace_seconds:g}")
        for name, value, choices in (("--sampler", self.sampler, SAMPLERS), ("--pruner", self.pruner, PRUNERS)):
            if value not in choices:
                raise ConfigError(f"{name} must be one of {', '.join(choices)}. Received: {value!r}")


@dataclasses.dataclass(frozen=True)
class TuneResult:
    folder: Path            # the study's folder: trials/, trials.csv, best.toml, plots
    table: "object"         # pandas DataFrame, one row per trial
    best_overrides: list[str]
    best_value: float | None
    metric: str
    exported: Path | None
    plots: list[str]        # the PNG files written into `folder`


def tuning_metric(config) -> str:
    """The validation figure trials are scored on: the task's (`TaskSpec.tuning_metric`); one line for tasks that
    have none."""
    return TASKS[config.task].tuning_metric(config)


def prepare(pipeline: str, overrides: Iterable[str], options: TuneOptions):
    """Everything checked before a trial runs: the config, the space, the storage. No TensorFlow."""
    overrides = list(overrides)
    config = load_pipeline(pipeline, overrides)
    metric = tuning_metric(config)
    dimensions = load_space(pipeline, options.space)
    check_space(pipeline, overrides, dimensions)
    if options.sampler == "grid" and any(not d.choices for d in dimensions):
        raise ConfigError("--sampler grid needs choices, not ranges, for every key of the search space")
    if options.include_defaults:
        default_params(config, dimensions)  # the pipeline's own values lie in the space
    folder = Path(config.export.dir) / config.name / "tune"
    return config, metric, dimensions, folder


def study_name(config, dimensions: list[Dimension], overrides: list[str]) -> str:
    """One study per pipeline, space and overrides: changing any of them starts another in the same database."""
    digest = hashlib.sha256(json.dumps([repr(dimensions), overrides]).encode()).hexdigest()[:8]
    return f"{config.name}-{digest}"


def tune_pipeline(pipeline: str, overrides: Iterable[str] = (), options: TuneOptions = TuneOptions()) -> TuneResult:
    """Search the pipeline's space; returns the trials table and the best trial's overrides.

    Raises:
        ConfigError: a space, option or config the pipeline refuses (before any trial).
    """
    overrides = [o for o in overrides]
    config, metric, dimensions, folder = prepare(pipeline, overrides, options)
    import optuna

    from kpipe.training.loop import monitor_mode

    folder.mkdir(parents=True, exist_ok=True)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)  # heartbeats, plots
    direction = "maximize" if monitor_mode(metric) == "max" else "minimize"
    # Two tuners starting at once would both create the database's tables (Optuna's schema set-up is not safe
    # against that: "UNIQUE constraint failed: alembic_version"): on one machine a file lock makes them take
    # turns; across machines (--storage URL) the loser retries once the winner has made them.
    with filelock.FileLock(str(folder / "study.lock")):
        study = _open_study(optuna, options, folder, study_name(config, dimensions, overrides), direction,
                            make_sampler(options, dimensions), make_pruner(options.pruner, options.prune_after))
        if options.include_defaults:  # once per study, whichever process comes first
            study.enqueue_trial(default_params(config, dimensions), user_attrs={"defaults": True},
                                skip_if_exists=True)
    study.set_user_attr("metric", metric)
    orphans = OrphanWatch(optuna, study, options.grace_seconds)
    orphans.look()
    finished = (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED)
    log.info("Study %s in %s: %d of %d trials finished so far; scored on %s", study.study_name,
             mask_passwords(options.storage) if options.storage else folder / "study.db",
             len(study.get_trials(states=finished)), options.trials, metric)
    _optimize(optuna, study, make_objective(pipeline, overrides, dimensions, metric, folder / TRIALS), options,
              after_each_trial=orphans.look)
    optuna.storages.fail_stale_trials(study)
    orphans.look()
    from kpipe.tuning.report import write_report

    return write_report(study, pipeline, overrides, dimensions, metric, folder, export_best=options.export_best)


def _optimize(optuna, study, objective, options: TuneOptions, after_each_trial=None) -> None:
    """`study.optimize` until the study has `options.trials` finished trials or this process's time is up.

    A process paused longer than the grace period (SIGSTOP, a laptop lid, a VM pause, a long database lock)
    finds on waking that its peers have marked its trial failed, and Optuna then refuses to record the trial
    ("Cannot tell a FAIL trial", or UpdateFinishedTrialError from the objective): the trial stays failed, as
    its peers recorded it, and this process goes on with the next one.
    """
    finished = (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED)
    deadline = None if options.timeout is None else time.monotonic() + options.timeout
    while len(study.get_trials(states=finished)) < options.trials:
        remaining = None if deadline is None else deadline - time.monotonic()
        if remaining is not None and remaining <= 0:
            return
        try:
            study.optimize(objective, timeout=remaining, catch=(Exception,),  # recorded with its reason
                           callbacks=[optuna.study.MaxTrialsCallback(options.trials, states=finished),
                                      *([after_each_trial] if after_each_trial else [])],
                           show_progress_bar=sys.stderr.isatty())
            return
        except (optuna.exceptions.UpdateFinishedTrialError, RuntimeError, ValueError) as error:
            if not _taken_from_us(error):
                raise
            log.warning("A trial was marked failed by another process while this one was paused (longer than the "
                        "%g s grace period); it stays failed, and the study goes on", options.grace_seconds)


def _taken_from_us(error: Exception) -> bool:
    """Whether `error` is Optuna refusing to record a trial another process has already finished (failed)."""
    import optuna

    return (isinstance(error, optuna.exceptions.UpdateFinishedTrialError)
            or "Cannot tell a" in str(error) or "has already finished" in str(error))


def _open_study(optuna, options: TuneOptions, folder: Path, name: str, direction: str, sampler, pruner,
                attempts: int = 5):
    for attempt in range(attempts):
        try:
            storage = optuna.storages.RDBStorage(
                options.storage or f"sqlite:///{(folder / 'study.db').resolve()}",
                engine_kwargs={"connect_args": {"timeout": 60}} if not options.storage else {},
                heartbeat_interval=max(1, round(options.heartbeat_seconds)),
                grace_period=max(2, round(options.grace_seconds)))
            return optuna.create_study(storage=storage, study_name=name, load_if_exists=True, direction=direction,
                                       sampler=sampler, pruner=pruner)
        except Exception as error:  # sqlalchemy's IntegrityError/OperationalError while another process sets up
            if attempt == attempts - 1 or "alembic_version" not in str(error) and "already exists" not in str(error):
                raise
            time.sleep(1 + attempt)


def trial_exports(folder: str | Path) -> list[tuple[int, Path]]:
    """(trial number, export folder) of every trial of the study in `folder` that exported a model, by number;
    empty when `folder` is not a study's folder. Pruned and failed trials export nothing."""
    trials = Path(folder) / TRIALS
    numbered = sorted((int(t.name), t) for t in trials.iterdir() if t.name.isdigit()) if trials.is_dir() else []
    return [(number, export.parent) for number, trial in numbered
            for export in sorted(trial.glob("*/*/saved_model.pb"))]


def make_sampler(options: TuneOptions, dimensions: list[Dimension]):
    """The sampler of `options`, seeded per trial from `--seed` and the trial's number: reproducible, and
    processes sharing a study (each with the same `--seed`) never draw the same values because of it, as they
    did when every process's sampler was seeded with `--seed` alone. A grid is one sampler for the study (see
    below)."""
    import optuna

    if options.sampler == "grid":
        # One sampler for the whole study, not one per trial: a grid sampler shuffles the grid with its seed and
        # hands trial n the n-th point of its shuffle (then unvisited points, read from the study), so samplers
        # seeded per trial repeated points and skipped others. Processes with the same --seed share the shuffle,
        # so trial numbers keep them apart.
        return optuna.samplers.GridSampler({d.path: list(range(len(d.choices))) for d in dimensions},
                                           seed=options.seed)

    def make(seed: int):
        if options.sampler == "random":
            return optuna.samplers.RandomSampler(seed=seed)
        # constant_liar: a running trial counts as a poor result, so parallel processes do not all sample
        # around the same best point
        return optuna.samplers.TPESampler(seed=seed, n_startup_trials=5, constant_liar=True)

    return _per_trial_seed(optuna)(make, options.seed)


def trial_seed(seed: int, number: int) -> int:
    return int.from_bytes(hashlib.sha256(f"{seed}:{number}".encode()).digest()[:4], "little")


def _per_trial_seed(optuna):
    class PerTrialSeed(optuna.samplers.BaseSampler):
        """A sampler made afresh for each trial, seeded with `trial_seed(seed, trial.number)`; it reads the
        study's history as the one sampler would (TPE keeps no state of its own between trials)."""

        def __init__(self, make, seed: int):
            self._make, self._seed = make, seed
            self._inner = make(seed)

        def before_trial(self, study, trial):
            self._inner = self._make(trial_seed(self._seed, trial.number))
            self._inner.before_trial(study, trial)

        def infer_relative_search_space(self, study, trial):
            return self._inner.infer_relative_search_space(study, trial)

        def sample_relative(self, study, trial, search_space):
            return self._inner.sample_relative(study, trial, search_space)

        def sample_independent(self, study, trial, param_name, param_distribution):
            return self._inner.sample_independent(study, trial, param_name, param_distribution)

        def after_trial(self, study, trial, state, values):
            self._inner.after_trial(study, trial, state, values)

        def reseed_rng(self):
            self._inner.reseed_rng()

    return PerTrialSeed


def make_pruner(name: str, prune_after: int = 1):
    """The pruner called `name`; no trial is stopped before epoch `prune_after` (steps are 1-based epochs), which
    spares slow starters (a low learning rate, a wide layer) that one epoch judges too early."""
    import optuna

    if name == "median":  # stop a trial whose epoch-k figure is worse than the median of the others at epoch k
        return optuna.pruners.MedianPruner(n_startup_trials=2, n_warmup_steps=prune_after)
    if name == "successive_halving":  # asynchronous successive halving: past epochs n, 3n, 9n, ... only the
        # best third of the trials that reached that epoch go on (more aggressive than the median)
        return optuna.pruners.SuccessiveHalvingPruner(min_resource=prune_after, reduction_factor=3)
    if name == "hyperband":
        return optuna.pruners.HyperbandPruner(min_resource=prune_after)
    return optuna.pruners.NopPruner()


def make_objective(pipeline: str, overrides: list[str], dimensions: list[Dimension], metric: str, trials_dir: Path):
    """The function Optuna calls per trial: one kpipe run with the trial's values, scored on `metric`."""
    import keras
    import optuna

    from kpipe.tasks.runner import run_pipeline
    from kpipe.training.loop import kept_epoch, watching

    class PruningReporter(keras.callbacks.Callback):
        """Reports each epoch's validation figure to the trial; stops the run when the pruner says so."""

        def __init__(self, trial):
            super().__init__()
            self.trial, self.epochs = trial, 0

        def on_epoch_end(self, epoch, logs=None):
            self.epochs += 1
            value = (logs or {}).get(metric)
            if value is None:
                return
            self.trial.report(float(value), step=self.epochs)
            last = epoch + 1 >= self.params.get("epochs", float("inf"))  # stopping now would save nothing
            reference = self.trial.user_attrs.get("defaults")  # the figure the search is there to beat: kept whole
            if not last and not reference and self.trial.should_prune():
                raise optuna.TrialPruned(f"{metric} {float(value):.4g} after epoch {self.epochs}")

    def objective(trial) -> float:
        entered = time.perf_counter()
        try:  # a pause can land here too, before the run starts
            values = {d.path: d.suggest(trial) for d in dimensions}
            trial.set_user_attr("overrides", [d.override(values[d.path]) for d in dimensions])
            folder = trials_dir / str(trial.number)
            config = load_pipeline(pipeline, [*overrides, *trial.user_attrs["overrides"], f'export.dir="{folder}"'])
            reporter, started = PruningReporter(trial), time.perf_counter()
            trial.set_user_attr("setup_seconds", round(started - entered, 2))  # sampler and config: not the run
        except optuna.exceptions.UpdateFinishedTrialError:
            raise optuna.TrialPruned("marked failed by another process while this one was paused") from None
        try:
            with watching(reporter):
                result = run_pipeline(config)
        except optuna.TrialPruned:
            raise
        except optuna.exceptions.UpdateFinishedTrialError:
            # Paused past the grace period, this process finds its trial failed by the others: it stays failed.
            # (TrialPruned: Optuna then logs one line for it, not a traceback; `_optimize` goes on.)
            raise optuna.TrialPruned("marked failed by another process while this one was paused") from None
        except Exception as error:
            _note(trial, "error", " ".join(str(error).split())[:300] or type(error).__name__)
            raise
        finally:
            _note(trial, "epochs", reporter.epochs)
            _note(trial, "seconds", round(time.perf_counter() - started, 1))
            cleared = time.perf_counter()
            keras.backend.clear_session()
            _note(trial, "cleanup_seconds", round(time.perf_counter() - cleared, 2))
        history = result.metrics["history"]
        trial.set_user_attr("export", str(result.export_dir))
        return float(history[kept_epoch(history, config.training) - 1][metric])

    return objective


def _note(trial, key: str, value) -> None:
    """`trial.set_user_attr`, unless another process has finished (failed) the trial meanwhile."""
    import optuna

    try:
        trial.set_user_attr(key, value)
    except optuna.exceptions.UpdateFinishedTrialError:
        pass
