"""The pruners `kpipe tune --pruner` builds, on figures reported by hand (the trials' real runs are in
tests/e2e/test_tune.py, which prunes a hopeless trial through the median pruner)."""

import optuna
import pytest

from kpipe.tuning.study import PRUNERS, make_pruner

GOOD, SLOW_STARTER, HOPELESS = [0.70, 0.80, 0.85, 0.86], [0.40, 0.60, 0.88, 0.90], [0.10, 0.12, 0.13, 0.14]


def pruned_at(pruner: str, curves: list[list[float]], prune_after: int = 1) -> list[int | None]:
    """The epoch (1-based) at which each trial, reporting `curve` epoch by epoch, is stopped; None: it finished."""
    # a fixed name: Hyperband puts each trial in a bracket by a checksum of the study name and trial number
    study = optuna.create_study(study_name="tune", direction="maximize", pruner=make_pruner(pruner, prune_after))
    stopped = []
    for curve in curves:
        trial = study.ask()
        for epoch, value in enumerate(curve, start=1):
            trial.report(value, step=epoch)
            if trial.should_prune():
                study.tell(trial, state=optuna.trial.TrialState.PRUNED)
                stopped.append(epoch)
                break
        else:
            study.tell(trial, curve[-1])
            stopped.append(None)
    return stopped


@pytest.mark.parametrize("pruner", ["median", "successive_halving"])
def test_a_hopeless_trial_is_stopped_after_its_first_epoch(pruner):
    assert pruned_at(pruner, [GOOD, GOOD, HOPELESS]) == [None, None, 1]


@pytest.mark.parametrize("pruner", ["median", "successive_halving", "hyperband"])
def test_prune_after_spares_every_trial_until_that_epoch(pruner):
    """`--prune-after 3`: the hopeless trials run their first two epochs and are stopped at the third."""
    assert pruned_at(pruner, [GOOD, GOOD, HOPELESS, HOPELESS]) == [None, None, 1, 1]
    assert pruned_at(pruner, [GOOD, GOOD, HOPELESS, HOPELESS], prune_after=3) == [None, None, 3, 3]


def test_successive_halving_keeps_only_the_best_third_where_the_median_keeps_the_upper_half():
    """The median (after 2 finished trials) stops a trial below the median of the others at the same epoch;
    successive halving goes on only with the best third of the trials at epochs 1, 3, 9, ..., so it also stops
    a second-best trial (why it saved 46 % of the epochs of benchmarks/tune_pruning.py, the median 33 %)."""
    second_best = [0.69, 0.79, 0.84, 0.85]
    curves = [GOOD, HOPELESS, HOPELESS, second_best]
    assert pruned_at("median", curves) == [None, None, 1, None]
    assert pruned_at("successive_halving", curves) == [None, 1, 1, 1]
    assert pruned_at("successive_halving", [GOOD, GOOD, GOOD, SLOW_STARTER]) == [None, None, None, 1]


def test_none_never_stops_a_trial_and_every_name_builds():
    assert pruned_at("none", [GOOD, HOPELESS, HOPELESS]) == [None, None, None]
    assert all(make_pruner(name) is not None for name in PRUNERS)
