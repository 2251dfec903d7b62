"""The samplers `kpipe tune` makes: a grid is walked point by point, other samplers differ trial by trial."""

import optuna

from kpipe.tuning.space import Dimension
from kpipe.tuning.study import TuneOptions, make_sampler


def test_a_grid_study_visits_every_point_once_before_repeating_any():
    dimensions = [Dimension("training.learning_rate", choices=(5e-5, 1e-4, 2e-4)),
                  Dimension("model.pooling", choices=("mean", "cls"))]
    for seed in (0, 7):
        sampler = make_sampler(TuneOptions(sampler="grid", seed=seed, trials=6), dimensions)
        study = optuna.create_study(sampler=sampler, direction="maximize")
        seen = []
        study.optimize(lambda trial: seen.append(tuple(d.suggest(trial) for d in dimensions)) or 0.5, n_trials=6)
        assert sorted(seen) == sorted((a, b) for a in (5e-5, 1e-4, 2e-4) for b in ("mean", "cls")), seen


def test_random_trials_of_one_study_draw_different_values():
    dimensions = [Dimension("model.dropout", low=0.0, high=0.5)]
    study = optuna.create_study(sampler=make_sampler(TuneOptions(sampler="random"), dimensions))
    values = []
    for _ in range(4):
        trial = study.ask()
        values.append(trial.suggest_float("model.dropout", 0.0, 0.5))
        study.tell(trial, 0.0)
    assert len(set(values)) == 4
