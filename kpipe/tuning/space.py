"""The search space of `kpipe tune`, from a pipeline's [tune] table or a --space file, without TensorFlow.

    [tune]
    "model.units" = [[16], [32], [64]]                            # choices (any TOML values)
    "training.learning_rate" = {low = 1e-4, high = 1e-2, log = true}
    "model.dropout" = {low = 0.0, high = 0.6}                     # floats: a uniform range
    "model.embedding_dim" = {low = 16, high = 128, step = 16}     # integers: a range with a step

Every key is a dotted config path; every choice and both ends of every range are checked against the
pipeline config before any trial runs, so a space the config would refuse stops at once with one line.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any, Iterable, Mapping

from kpipe.tasks.named_pipelines import load_pipeline, pipeline_path
from kpipe.config.strict import read_toml
from kpipe.errors import ConfigError

RANGE_KEYS = {"low", "high", "log", "step"}


@dataclasses.dataclass(frozen=True)
class Dimension:
    """One searched config value: a list of `choices`, or a range [low, high] (log-uniform with `log`)."""

    path: str
    choices: tuple = ()
    low: float | None = None
    high: float | None = None
    log: bool = False
    step: float | None = None

    @property
    def is_int(self) -> bool:
        return isinstance(self.low, int) and isinstance(self.high, int) and not isinstance(self.low, bool)

    def override(self, value: Any) -> str:
        """`path=value` as `--set` takes it (TOML syntax: JSON for lists, numbers and strings)."""
        return f"{self.path}={json.dumps(value)}"

    def suggest(self, trial) -> Any:
        """The trial's value (Optuna's suggest_*); choices are indexed, since Optuna stores only scalars."""
        if self.choices:
            return self.choices[trial.suggest_categorical(self.path, list(range(len(self.choices))))]
        if self.is_int:
            return trial.suggest_int(self.path, self.low, self.high, step=int(self.step or 1), log=self.log)
        return trial.suggest_float(self.path, self.low, self.high, log=self.log, step=self.step)

    def value_of(self, stored: Any) -> Any:
        """A value Optuna stored for this dimension, as the config takes it."""
        return self.choices[stored] if self.choices else stored

    def edge_values(self) -> list:
        return list(self.choices) if self.choices else [self.low, self.high]


def parse_space(table: Mapping[str, Any], *, source: str) -> list[Dimension]:
    """The dimensions of a [tune] table.

    Raises:
        ConfigError: an empty table, an empty list of choices, a range without low < high, unknown range keys.
    """
    if not table:
        raise ConfigError(f"{source} has no [tune] table to search; add one (e.g. \"training.learning_rate\" = "
                          "{low = 1e-4, high = 1e-2, log = true}) or pass --space FILE")
    dimensions = []
    for path, value in table.items():
        where = f"tune.\"{path}\" in {source}"
        if isinstance(value, (list, tuple)):
            if not value:
                raise ConfigError(f"{where} is an empty list of choices; give at least one value")
            dimensions.append(Dimension(path, choices=tuple(_hashable(v) for v in value)))
        elif isinstance(value, Mapping):
            unknown = set(value) - RANGE_KEYS
            if unknown or not {"low", "high"} <= set(value):
                raise ConfigError(f"{where} must be a list of choices or a range {{low, high[, log, step]}}. "
                                  f"Received: {dict(value)}")
            low, high = value["low"], value["high"]
            if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (low, high)) or low >= high:
                raise ConfigError(f"{where} is an empty range: low must be a number below high. Received: "
                                  f"low={low!r}, high={high!r}")
            if value.get("log") and low <= 0:
                raise ConfigError(f"{where} is log-uniform, so low must be > 0. Received: low={low}")
            dimensions.append(Dimension(path, low=low, high=high, log=bool(value.get("log", False)),
                                        step=value.get("step")))
        else:
            raise ConfigError(f"{where} must be a list of choices or a range {{low, high[, log, step]}}. "
                              f"Received: {value!r}")
    return dimensions


def _hashable(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def default_params(config, dimensions: list[Dimension]) -> dict[str, Any]:
    """The Optuna parameters of a trial that runs `config`'s own values (`kpipe tune --include-defaults`).

    Raises:
        ConfigError: a value of the config outside the space (not among the choices, or outside the range).
    """
    params = {}
    for dimension in dimensions:
        value = config
        for part in dimension.path.split("."):
            value = getattr(value, part)
        value = _hashable(value)
        where = f"--include-defaults: the pipeline's {dimension.override(value)} is"
        if dimension.choices:
            if value not in dimension.choices:
                raise ConfigError(f"{where} not among the search space's choices for {dimension.path}; add it to "
                                  "them or leave out --include-defaults")
            params[dimension.path] = dimension.choices.index(value)
        elif not dimension.low <= value <= dimension.high:
            raise ConfigError(f"{where} outside the search space's range [{dimension.low}, {dimension.high}]; "
                              "widen the range or leave out --include-defaults")
        else:
            params[dimension.path] = value
    return params


def load_space(pipeline: str, space_file: str | None) -> list[Dimension]:
    """The search space of `pipeline`: its [tune] table, or the [tune] table (or top level) of `space_file`."""
    if space_file:
        path = Path(space_file)
        if not path.is_file():
            raise ConfigError(f"--space file not found: {space_file}")
        raw = read_toml(path)
        return parse_space(raw.get("tune", raw), source=str(path))
    return parse_space(read_toml(pipeline_path(pipeline)).get("tune", {}), source=f"pipeline '{pipeline}'")


def check_space(pipeline: str, overrides: Iterable[str], dimensions: list[Dimension]) -> None:
    """Every choice and both ends of every range must make a config the pipeline accepts.

    Raises:
        ConfigError: one line naming the value and what the config says about it.
    """
    overrides = list(overrides)
    for dimension in dimensions:
        for value in dimension.edge_values():
            setting = dimension.override(value)
            try:
                load_pipeline(pipeline, [*overrides, setting])
            except ConfigError as error:
                message = str(error).split(" (config: ")[0]
                raise ConfigError(f"the search space offers {setting}, which the config refuses: {message}") \
                    from None
