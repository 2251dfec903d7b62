"""What `kpipe tune` leaves: the trials table (printed and trials.csv), the best trial's config as a runnable
best.toml, the optimisation history and parameter importances as PNG, and optionally the best export."""

from __future__ import annotations

import logging
from pathlib import Path

from kpipe.atomic import write_atomically, write_text_atomically
from kpipe.tasks.named_pipelines import load_pipeline
from kpipe.tuning.space import Dimension

log = logging.getLogger(__name__)


def trials_table(study, dimensions: list[Dimension]):
    """One row per trial: number, state, the validation figure, epochs, seconds (its kpipe run's), seconds
    outside the run (the sampler, the config, clearing Keras, the study's database), each parameter, the error."""
    import pandas as pd

    rows = []
    for trial in study.get_trials(deepcopy=False):
        seconds = trial.user_attrs.get("seconds")
        total = ((trial.datetime_complete - trial.datetime_start).total_seconds()
                 if trial.datetime_complete and trial.datetime_start else None)
        row = {"trial": trial.number, "state": trial.state.name.lower(), "value": trial.value,
               "epochs": trial.user_attrs.get("epochs"), "seconds": seconds,
               "other_seconds": round(total - seconds, 1) if total is not None and seconds is not None else None}
        for dimension in dimensions:
            stored = trial.params.get(dimension.path)
            value = dimension.value_of(stored) if stored is not None else None
            row[dimension.path] = list(value) if isinstance(value, tuple) else value
        row["error"] = trial.user_attrs.get("error", "")
        if trial.user_attrs.get("defaults"):
            row["defaults"] = "yes"  # the pipeline's own values (--include-defaults)
        rows.append(row)
    table = pd.DataFrame(rows)
    if "defaults" in table:
        table["defaults"] = table["defaults"].fillna("")
    return table


def write_report(study, pipeline: str, overrides: list[str], dimensions: list[Dimension], metric: str,
                 folder: Path, *, export_best: bool = False):
    from kpipe.tuning.publish import publish_best
    from kpipe.tuning.study import TuneResult

    table = trials_table(study, dimensions)
    # Whole files or the previous ones: several tuners of one study rewrite them as their trials end
    write_atomically(folder / "trials.csv", lambda partial: table.to_csv(partial, index=False))
    completed = [t for t in study.get_trials(deepcopy=False) if t.state.name == "COMPLETE"]
    best_overrides, best_value, exported = [], None, None
    if completed:
        best = study.best_trial
        best_overrides, best_value = list(best.user_attrs["overrides"]), best.value
        config = load_pipeline(pipeline, [*overrides, *best_overrides])
        write_text_atomically(folder / "best.toml",
                              f"# kpipe tune {pipeline}: trial {best.number}, {metric} {best.value:.6g} on validation\n"
                              f"# overrides: {' '.join(best_overrides)}\n{config.to_toml()}")
        if export_best:
            exported = publish_best(folder, study.study_name, best.number, Path(best.user_attrs["export"]),
                                    Path(config.export.dir) / config.name)
    plots = plot(study, folder, metric)
    return TuneResult(folder, table, best_overrides, best_value, metric, exported, plots)


def plot(study, folder: Path, metric: str) -> list[str]:
    """optimization_history.png, param_importances.png and epoch_curves.png (every trial's validation figure
    epoch by epoch, the pruned ones too: where the pruner stopped them), Optuna's matplotlib plots; returns the
    names of those it could draw."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker
    import optuna.visualization.matplotlib as optuna_plots

    def epoch_curves(study, target_name):
        axes = optuna_plots.plot_intermediate_values(study)
        axes.set_xlabel("epoch")
        axes.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
        axes.set_ylabel(target_name)
        axes.set_title(f"{target_name} after each epoch, every trial")
        if axes.get_legend() is not None:  # one entry per trial: unreadable past a few
            axes.get_legend().remove()
        return axes

    written = []
    for name, draw in (("optimization_history", optuna_plots.plot_optimization_history),
                       ("param_importances", optuna_plots.plot_param_importances),
                       ("epoch_curves", epoch_curves)):
        try:
            axes = draw(study, target_name=metric)
        except (ValueError, RuntimeError, ZeroDivisionError) as error:  # e.g. importances of fewer than 2 trials
            log.info("No %s plot: %s", name, error)
            continue
        figure = axes.figure if hasattr(axes, "figure") else axes[0].figure
        figure.set_size_inches(8, 4.5)
        figure.tight_layout()
        figure.savefig(folder / f"{name}.png", dpi=110)
        plt.close(figure)
        written.append(f"{name}.png")
    return written
