"""`kpipe compare`: runs side by side: headline metrics, training time, the config keys that differ,
and their validation curves overlaid in one PNG.

A run is an export version folder; a pipeline name or a folder of versions means all its versions; a
`kpipe tune` study's folder means every trial that exported a model.
"""

from __future__ import annotations

import dataclasses
import json
import tomllib
from pathlib import Path
from typing import Sequence

from kpipe.portable.export_files import CONFIG_FILE, METRICS_FILE
from kpipe.exports import manifest, versions
from kpipe.errors import KpipeError


@dataclasses.dataclass(frozen=True)
class RunRecord:
    """What an export says about the run that made it."""

    label: str          # "sentiment-bilstm/2"
    path: Path
    task: str
    metrics: dict
    config: dict        # dotted key -> value
    history: list[dict]


def flatten(tree: dict, prefix: str = "") -> dict:
    """{"a": {"b": 1}} -> {"a.b": 1} (lists kept as values)."""
    flat = {}
    for key, value in tree.items():
        if isinstance(value, dict):
            flat |= flatten(value, f"{prefix}{key}.")
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def lookup(tree: dict, dotted: str):
    """`tree["a"]["b"]` for "a.b", or None when any part is missing."""
    for part in dotted.split("."):
        if not isinstance(tree, dict) or part not in tree:
            return None
        tree = tree[part]
    return tree


def read_run(folder: Path) -> RunRecord:
    info = manifest.read(folder)
    metrics = json.loads((folder / METRICS_FILE).read_text(encoding="utf-8"))
    config_file = folder / CONFIG_FILE
    config = flatten(tomllib.loads(config_file.read_text(encoding="utf-8"))) if config_file.is_file() else {}
    label = f"{info.get('pipeline') or folder.parent.name}/{folder.name}"
    return RunRecord(label, folder, info["task"], metrics, config, metrics.get("history") or [])


def read_runs(items: Sequence[str], export_dir: str | Path = "saved_models") -> list[RunRecord]:
    """The runs behind `items`; raises KpipeError for fewer than two, or runs of different tasks."""
    from kpipe.tuning.study import trial_exports

    runs = []
    for item in items:
        trials = trial_exports(item)
        runs += ([dataclasses.replace(read_run(folder), label=f"trial {number}") for number, folder in trials]
                 or [read_run(folder) for folder in versions.resolve_versions(item, export_dir)])
    if len({run.label for run in runs}) < len(runs):  # the same pipeline/version from several folders
        runs = [dataclasses.replace(run, label=str(run.path)) for run in runs]
    if len(runs) < 2:
        raise KpipeError(f"compare needs at least two runs; {', '.join(items)} gave {len(runs)} "
                         "(name two export folders, or a pipeline with several versions)")
    tasks = sorted({run.task for run in runs})
    if len(tasks) > 1:
        by_task = "; ".join(f"{task}: {', '.join(r.label for r in runs if r.task == task)}" for task in tasks)
        raise KpipeError(f"these runs are of different tasks ({by_task}); compare runs of one task")
    return runs


def differing_keys(runs: Sequence[RunRecord]) -> list[str]:
    """Config keys whose values are not the same in every run (a key missing in one run differs); not where the
    runs were exported (`export.dir`), which is no setting of the model."""
    keys = sorted(set().union(*(run.config for run in runs)) - {"export.dir"})
    return [k for k in keys if len({json.dumps(run.config.get(k), sort_keys=True) for run in runs}) > 1]


def comparison_rows(runs: Sequence[RunRecord]) -> tuple[list[str], list[list[str]]]:
    """(header, rows): run, headline metrics, epochs, training seconds, then each differing config key."""
    from kpipe.tasks.registry import TASKS

    headline = list(TASKS[runs[0].task].headline)
    if any("micro_f1" in run.metrics for run in runs):  # classifiers of several labels per text
        headline = ["micro_f1", "macro_f1", "subset_accuracy", "baseline.micro_f1"]
    keys = differing_keys(runs)
    header = ["run", *headline, "epochs", "train s", *keys]

    def cell(value) -> str:
        if value is None:
            return "-"
        if isinstance(value, float):
            return f"{value:.4g}"
        return value if isinstance(value, str) else json.dumps(value)

    rows = [[run.label, *(cell(lookup(run.metrics, m)) for m in headline), cell(run.metrics.get("epochs_trained")),
             cell(run.metrics.get("train_seconds_this_run")), *(cell(run.config.get(k)) for k in keys)]
            for run in runs]
    return header, rows


def format_table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(x)) for x in column) for column in zip(header, *rows)]
    return "\n".join("  ".join(str(x).ljust(w) for x, w in zip(line, widths)).rstrip() for line in [header, *rows])


def plot_curves(runs: Sequence[RunRecord], path: str | Path) -> Path:
    """One panel per validation metric every run logged (val_loss first), one line per run, by epoch."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    common = set.intersection(*({k for h in run.history for k in h if k.startswith("val_")} for run in runs))
    panels = sorted(common, key=lambda k: (k != "val_loss", k))[:3]
    if not panels:
        raise KpipeError("these runs logged no common validation metric to plot (no history in their metrics.json)")
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4), squeeze=False)
    for ax, metric in zip(axes[0], panels):
        for run in runs:
            points = [(i + 1, h[metric]) for i, h in enumerate(run.history) if metric in h]
            ax.plot(*zip(*points), marker="o", ms=3, lw=1.5, label=run.label)
        ax.set_xlabel("epoch")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_title(metric)
        ax.grid(alpha=0.3)
    axes[0, 0].legend(fontsize=8)
    fig.suptitle(f"{runs[0].task}: validation curves of {len(runs)} runs")
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
