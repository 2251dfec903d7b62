"""Trials left running without a heartbeat (their tuner killed as the trial started), failed after the grace period
as timed by the process that looks."""

from __future__ import annotations

import logging
import time

log = logging.getLogger(__name__)


class OrphanWatch:
    """Fails the running trials that never recorded a heartbeat once this process has seen them without one for
    the grace period.

    Optuna fails a dead process's trial once its last heartbeat is older than the grace period; a tuner killed
    between creating a trial and its first heartbeat (milliseconds) leaves a trial with none, which that rule
    never fails: it would stay "running" in the study for good. Such a trial's age cannot be read from the study:
    its start time is the local clock of whichever machine created it (another time zone, or a clock running
    ahead, would make a trial created a moment ago look hours old), so the wait is timed on this process's own
    clock, from the first look that found the trial without a heartbeat. A live trial records its first
    heartbeat within moments, long before a second look.
    """

    def __init__(self, optuna, study, grace_seconds: float):
        self.optuna, self.study, self.grace_seconds = optuna, study, grace_seconds
        self.first_seen: dict[int, float] = {}  # trial id -> time.monotonic() of the first look that found it

    def look(self, *_callback_arguments) -> list[int]:
        """One look (also an Optuna callback, run after each trial): the numbers of the trials it failed."""
        orphans = _trials_without_heartbeat(self.optuna, self.study)
        now = time.monotonic()
        self.first_seen = {trial_id: self.first_seen.get(trial_id, now) for trial_id in orphans}
        failed = []
        for trial_id, number in orphans.items():
            if now - self.first_seen[trial_id] < self.grace_seconds:
                continue
            try:
                self.study._storage.set_trial_state_values(trial_id, state=self.optuna.trial.TrialState.FAIL)
                log.info("Trial %d never reported from its process (killed as it started): marked failed", number)
                failed.append(number)
            except self.optuna.exceptions.UpdateFinishedTrialError:  # another process did it first
                pass
        return failed


def _trials_without_heartbeat(optuna, study) -> dict[int, int]:
    """{trial id: number} of the study's running trials that have never recorded a heartbeat."""
    import sqlalchemy.orm
    from optuna.storages._rdb import models  # Optuna has no public call for a trial's heartbeat

    storage = getattr(study._storage, "_backend", study._storage)  # create_study wraps it in a cache
    if not isinstance(storage, optuna.storages.RDBStorage):
        return {}
    with sqlalchemy.orm.Session(storage.engine) as session:
        return {trial.trial_id: trial.number for trial in session.query(models.TrialModel).filter(
            models.TrialModel.study_id == study._study_id,
            models.TrialModel.state == optuna.trial.TrialState.RUNNING,
            ~models.TrialModel.heartbeats.any())}
