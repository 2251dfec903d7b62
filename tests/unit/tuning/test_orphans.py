"""A trial left running without a heartbeat (its tuner killed as the trial started) is failed after the grace
period as timed by the process that looks, never by the start time another machine's clock wrote (reliability
finding 20)."""

import datetime
import time

import optuna
import pytest
import sqlalchemy

from kpipe.tuning.orphans import OrphanWatch


@pytest.fixture
def study(tmp_path):
    storage = optuna.storages.RDBStorage(f"sqlite:///{tmp_path / 'study.db'}", heartbeat_interval=1, grace_period=2)
    return optuna.create_study(storage=storage, study_name="s")


def started_at(study, number: int, when: datetime.datetime) -> None:
    """The trial's start time as another machine's local clock would have written it."""
    storage = study._storage._backend
    with storage.engine.begin() as connection:
        connection.execute(sqlalchemy.text("UPDATE trials SET datetime_start = :when WHERE number = :number"),
                           {"when": when, "number": number})


def states(study) -> list[str]:
    return [trial.state.name for trial in study.get_trials(deepcopy=False)]


def test_a_trial_stamped_by_a_clock_a_day_behind_is_not_failed_at_first_sight(study):
    """A tuner in another time zone creates a trial this very moment: its start time reads a day old here."""
    study.ask()
    started_at(study, 0, datetime.datetime.now() - datetime.timedelta(days=1))
    watch = OrphanWatch(optuna, study, grace_seconds=0.5)
    assert watch.look() == [] and states(study) == ["RUNNING"]


def test_a_trial_still_without_a_heartbeat_after_the_grace_period_is_failed(study):
    study.ask()
    started_at(study, 0, datetime.datetime.now() + datetime.timedelta(hours=5))  # a clock ahead: no matter
    watch = OrphanWatch(optuna, study, grace_seconds=0.5)
    assert watch.look() == []
    time.sleep(0.6)
    assert watch.look() == [0] and states(study) == ["FAIL"]


def test_a_trial_that_records_a_heartbeat_before_the_second_look_is_left_running(study):
    trial = study.ask()
    watch = OrphanWatch(optuna, study, grace_seconds=0.5)
    assert watch.look() == []
    study._storage.record_heartbeat(trial._trial_id)  # its tuner was alive: the first heartbeat came late
    time.sleep(0.6)
    assert watch.look() == [] and states(study) == ["RUNNING"]
