"""The registry of named pipelines (`pipelines/*.toml`, shipped as `kpipe._pipelines`): finding, loading with
overrides, listing, and checking that a config can run here (its packages installed)."""

from __future__ import annotations

import dataclasses
import functools
import importlib.resources
import logging
from pathlib import Path
from typing import Iterable

from kpipe.config.pipeline import PipelineConfig
from kpipe.config.strict import apply_overrides, parse_override, read_toml
from kpipe.dependencies import require_tensorflow_text
from kpipe.errors import ConfigError, did_you_mean
from kpipe.tasks.registry import TASKS, family_spec, parse_pipeline_config

log = logging.getLogger(__name__)

# Renamed pipelines: old name -> (new name, why). The old name keeps running the new pipeline, with a warning.
RENAMED = {"electricity-lstm": ("electricity-seasonal-ar", "its LSTM lowers validation MAE by only 3.4 %; the "
                                "seasonal skip and the linear autoregression do the work"),
           "weather-gru": ("weather-ar", "a least-squares linear path lowers validation MAE by 11 %, and the GRU "
                           "on top of it by 0.0 %")}


@dataclasses.dataclass(frozen=True)
class PipelineEntry:
    """One row of `kpipe list`."""

    name: str
    task: str
    dataset: str
    description: str
    path: Path
    family: str
    portable: bool  # `kpipe export --format onnx|litert` writes its exports


@functools.cache
def registry() -> dict[str, Path]:
    """Pipeline name -> its TOML file, for every bundled pipeline.

    Raises:
        ConfigError: two files declare the same `name`.
    """
    found: dict[str, Path] = {}
    for resource in sorted(importlib.resources.files("kpipe._pipelines").iterdir(), key=lambda r: r.name):
        if not resource.name.endswith(".toml"):
            continue
        path = Path(str(resource))
        name = read_toml(path).get("name", path.stem)
        if name in found:
            raise ConfigError(f"two pipelines are named '{name}': {found[name]} and {path}")
        found[name] = path
    return found


def pipeline_path(name_or_path: str) -> Path:
    """The TOML file of a pipeline name, or the given path if it names a .toml file."""
    if name_or_path.endswith(".toml"):
        if not Path(name_or_path).is_file():
            raise ConfigError(f"config file not found: {name_or_path}")
        return Path(name_or_path)
    if name_or_path in RENAMED:
        new_name, why = RENAMED[name_or_path]
        log.warning("Pipeline '%s' is now '%s' (%s): running '%s'", name_or_path, new_name, why, new_name)
        name_or_path = new_name
    known = registry()
    if name_or_path not in known:
        raise ConfigError(f"unknown pipeline '{name_or_path}'{did_you_mean(name_or_path, known)}; "
                          f"known pipelines: {', '.join(sorted(known))} (or pass a path to a .toml file)")
    return known[name_or_path]


def load_pipeline(name_or_path: str, overrides: Iterable[str] = ()) -> PipelineConfig:
    """The validated config of a named pipeline (or a .toml path), with `a.b=value` overrides applied.

    Example:
        >>> load_pipeline("sentiment-bilstm", ["training.epochs=1"]).training.epochs
        1

    Raises:
        ConfigError: unknown pipeline, unknown key (with did-you-mean), wrong type or range.
    """
    overrides = list(overrides)
    try:
        raw = for_overridden_family(read_toml(pipeline_path(name_or_path)), overrides)
        return parse_pipeline_config(apply_overrides(raw, overrides))
    except ConfigError as error:
        if overrides:
            raise ConfigError(f"{error} (config: {name_or_path}, overrides: {' '.join(overrides)})") from None
        raise


def for_overridden_family(raw: dict, overrides: list[str]) -> dict:
    """The pipeline's settings for the family an override names (`--set model.family=rnn_lm`): its [model]
    settings that family does not take are left out, with a warning, so the other family runs with its own
    defaults. A key that an override names is still checked (a mistake there is the user's)."""
    family = dict(parse_override(text) for text in overrides).get("model.family")
    spec, model = TASKS.get(raw.get("task")), raw.get("model", {})
    if spec is None or family not in spec.models or not isinstance(model, dict) or family == spec.family_of(model):
        return raw  # nothing switched (or a mistake that parsing names)
    cls = spec.models[family]
    takes = {f.name for f in dataclasses.fields(cls) if f.init and not f.metadata.get("derived")}
    takes |= set(getattr(cls, "RENAMED_KEYS", {}))
    left_out = sorted(key for key in model if key not in takes)
    if left_out:
        log.warning("model.family = %r: the pipeline's %s settings that %s does not take are left out: %s", family,
                    spec.family_of(model), family, ", ".join(left_out))
    return {**raw, "model": {key: value for key, value in model.items() if key in takes}}


def list_pipelines() -> list[PipelineEntry]:
    """Every bundled pipeline with its task, model family, dataset and one-line description, by name."""
    entries = []
    for name, path in sorted(registry().items()):
        config = load_pipeline(str(path))
        family = config.model.family
        entries.append(PipelineEntry(name, config.task, config.data.describe(), config.description, path, family,
                                     family_spec(config.task, family).portable))
    return entries


def check_runnable(config: PipelineConfig) -> None:
    """Raise MissingDependencyError when a package the run needs is not installed (before TensorFlow
    loads; a config is still valid without it, so `kpipe list` and `show` work everywhere)."""
    if getattr(config.preprocessing, "tokenizer", "") == "wordpiece":
        require_tensorflow_text(f"{config.name} (preprocessing.tokenizer = \"wordpiece\")")
    if hasattr(config.data, "check_files"):  # a data section that reads a glob its own way
        config.data.check_files()
    elif getattr(config.data, "source", "") == "shards":  # a glob that matches nothing: said before TensorFlow loads
        from kpipe.datasets.shards import list_shards

        list_shards(config.data.path)
