"""Strict config loading: TOML or dict -> frozen dataclasses, with dotted `--set` overrides.

Every section of a pipeline config is a frozen dataclass that validates its own values in
`__post_init__`. This module only knows how to turn nested dicts into those dataclasses strictly:
unknown keys are errors with their dotted path and a "did you mean" hint, and values of the wrong
type name the field and show the value received. Nothing is dropped or coerced silently.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import tomllib
import types
import typing
from pathlib import Path
from typing import Any, Mapping

from kpipe.errors import ConfigError, did_you_mean

log = logging.getLogger(__name__)

# Field metadata flag: the value is filled in by the pipeline from the data (e.g. the number of
# classes), so a config file must not set it.
DERIVED = {"derived": True}


def check_choice(field: str, value: Any, choices: typing.Iterable[Any]) -> None:
    """Raise ValueError unless `value` is one of `choices`."""
    choices = list(choices)
    if value not in choices:
        hint = did_you_mean(str(value), [str(c) for c in choices])
        raise ValueError(
            f"`{field}` must be one of {', '.join(map(repr, choices))}. Received: {field}={value!r}{hint}"
        )


def check_layer_sizes(field: str, sizes: typing.Sequence[int]) -> None:
    """Raise ValueError unless `sizes` lists at least one layer size, each >= 1."""
    if not sizes:
        raise ValueError(f"`{field}` must list at least one layer size. Received: {field}=[]")
    for size in sizes:
        check_range(field, size, low=1)


def check_range(field: str, value: float, *, low: float | None = None, high: float | None = None,
                low_inclusive: bool = True, high_inclusive: bool = True) -> None:
    """Raise ValueError unless `low <= value <= high` (bounds optional, inclusive by default); NaN never is."""
    if isinstance(value, float) and math.isnan(value):
        raise ValueError(f"`{field}` must be a number, not NaN. Received: {field}={value!r}")
    too_low = low is not None and (value < low if low_inclusive else value <= low)
    too_high = high is not None and (value > high if high_inclusive else value >= high)
    if too_low or too_high:
        left = "" if low is None else f"{'≥' if low_inclusive else '>'} {low}"
        right = "" if high is None else f"{'≤' if high_inclusive else '<'} {high}"
        bound = " and ".join(part for part in (left, right) if part)
        raise ValueError(f"`{field}` must be {bound}. Received: {field}={value!r}")


# === Building dataclasses from dicts ===

PLURALS = {int: "integers", float: "numbers", str: "strings", bool: "booleans"}


def type_name(tp: Any) -> str:
    """What a value of annotation `tp` is, as error messages and the configuration reference say it."""
    origin = typing.get_origin(tp)
    if origin in (tuple, list):
        (inner, *_) = typing.get_args(tp) or (Any,)
        return f"a list of {PLURALS.get(inner, type_name(inner) + 's')}"
    if origin in (typing.Union, types.UnionType):
        return " or ".join(type_name(a) for a in typing.get_args(tp))
    return {int: "an integer", float: "a number", str: "a string", bool: "true or false",
            type(None): "none"}.get(tp, getattr(tp, "__name__", str(tp)))


def _families(tp: Any) -> dict[str, type]:
    """For a union of config dataclasses that each have a `family` field: family name -> class (first = default)."""
    if typing.get_origin(tp) not in (typing.Union, types.UnionType):
        return {}
    options = typing.get_args(tp)
    if not all(dataclasses.is_dataclass(o) and "family" in {f.name for f in dataclasses.fields(o)} for o in options):
        return {}
    return {next(f.default for f in dataclasses.fields(o) if f.name == "family"): o for o in options}


def _convert(path: str, value: Any, tp: Any) -> Any:
    """Check `value` against the annotation `tp`, returning it in canonical form (lists -> tuples)."""
    origin = typing.get_origin(tp)
    families = _families(tp)
    if families and isinstance(value, Mapping):  # a choice of model configs: the "family" key picks one
        family = value.get("family", next(iter(families)))
        if family not in families:
            raise ConfigError(f"unknown {path}.family {family!r}{did_you_mean(str(family), families)}; "
                              f"known: {', '.join(families)}")
        return from_dict(families[family], value, path=path)
    if origin in (typing.Union, types.UnionType):
        tables = [option for option in typing.get_args(tp) if dataclasses.is_dataclass(option)]
        if len(tables) == 1 and isinstance(value, Mapping):  # an optional table: its own errors, not "must be"
            return from_dict(tables[0], value, path=path)
        for option in typing.get_args(tp):
            try:
                return _convert(path, value, option)
            except ConfigError:
                continue
    elif origin in (tuple, list):
        if isinstance(value, (list, tuple)):
            inner = typing.get_args(tp)[0]
            return tuple(_convert(f"{path}[{i}]", v, inner) for i, v in enumerate(value))
    elif tp is Any:
        return value
    elif tp is bool:
        if isinstance(value, bool):
            return value
    elif tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif tp is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    elif tp is str:
        if isinstance(value, str):
            return value
    elif tp is type(None):
        if value is None:
            return value
    elif dataclasses.is_dataclass(tp):
        if isinstance(value, Mapping):
            return from_dict(tp, value, path=path)
        if isinstance(value, tp):
            return value
    raise ConfigError(
        f"{path} must be {type_name(tp)}. Received: {value!r} ({type(value).__name__})"
    )


def from_dict(cls: type, data: Mapping[str, Any], *, path: str = "") -> Any:
    """Build the dataclass `cls` from `data`, strictly.

    Args:
        cls: a dataclass type whose fields carry type annotations.
        data: the values, typically one section of a parsed TOML file.
        path: dotted prefix used in error messages (e.g. "training").

    Returns:
        An instance of `cls`.

    Raises:
        ConfigError: for unknown keys (with a did-you-mean), derived keys, wrong types, and any
            `ValueError` raised by the dataclass's own validation (prefixed with `path`).
    """
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    prefix = f"{path}." if path else ""
    data = _renamed_keys(cls, data, prefix)
    kwargs = {}
    for key, value in data.items():
        if key not in fields:
            hint = did_you_mean(key, fields).replace("'", f"'{prefix}", 1)
            raise ConfigError(f"unknown key '{prefix}{key}'{hint}; "
                              f"known keys in {path or 'the top level'}: {', '.join(sorted(fields))}")
        if fields[key].metadata.get("derived"):
            raise ConfigError(f"'{prefix}{key}' is set by kpipe from the data; remove it from the config")
        kwargs[key] = _convert(prefix + key, value, hints[key])
    try:
        return cls(**kwargs)
    except TypeError as error:  # a required field is missing
        missing = [n for n, f in fields.items() if n not in kwargs
                   and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
        if missing:
            raise ConfigError(f"missing key '{prefix}{missing[0]}'") from None
        raise ConfigError(f"{path or 'config'}: {error}") from None
    except ValueError as error:
        raise ConfigError(f"{path + ': ' if path else ''}{error}") from None


def _renamed_keys(cls: type, data: Mapping[str, Any], prefix: str) -> Mapping[str, Any]:
    """`data` with the keys `cls.RENAMED_KEYS` maps (old name -> (new name, why)) read under their new names, each
    with a one-line warning, as renamed pipelines are. The old name's value wins where both are given: it was set on
    purpose (a `--set` of old habit over the pipeline's file, or an old file)."""
    renamed = getattr(cls, "RENAMED_KEYS", {})
    if not any(key in renamed for key in data):
        return data
    data = dict(data)
    for old, (new, why) in renamed.items():
        if old in data:
            log.warning("'%s%s' is now '%s%s' (%s): reading it as %s%s = %r", prefix, old, prefix, new, why, prefix,
                        new, data[old])
            data[new] = data.pop(old)
    return data


def to_dict(instance: Any) -> dict[str, Any]:
    """A dataclass as a plain dict of TOML-friendly values that `from_dict` accepts again.

    Tuples become lists; None values and derived fields (set from the data) are left out.
    """
    def plain(value: Any) -> Any:
        if dataclasses.is_dataclass(value):
            return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)
                    if getattr(value, f.name) is not None and not f.metadata.get("derived")}
        if isinstance(value, (list, tuple)):
            return [plain(v) for v in value]
        return value
    return plain(instance)


# === TOML in and out ===

def read_toml(path: str | Path) -> dict[str, Any]:
    """Parse a TOML file, turning syntax errors into a ConfigError that names the file."""
    path = Path(path)
    try:
        with path.open("rb") as f:
            return tomllib.load(f)
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {path}") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path} is not valid TOML: {error}") from None


def parse_override(text: str) -> tuple[str, Any]:
    """Split `a.b=value` into ("a.b", value), reading value as a TOML value or else a plain string.

    `epochs=3` gives 3, `dropout=0.5` gives 0.5, `bidirectional=false` gives False,
    `units=[64, 32]` gives [64, 32], and `path=data/train.csv` gives the string "data/train.csv".
    """
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ConfigError(f"--set expects KEY=VALUE with a dotted key, e.g. training.epochs=1. Received: {text!r}")
    raw = raw.strip()
    try:
        value = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw
    return key, value


def apply_overrides(data: dict[str, Any], overrides: typing.Iterable[str]) -> dict[str, Any]:
    """Return a copy of nested dict `data` with each `a.b=value` override set.

    Unknown keys are not checked here: the result goes through `from_dict`, which rejects them
    with the same message a config file would get.
    """
    import copy

    result = copy.deepcopy(data)
    for text in overrides:
        key, value = parse_override(text)
        *parents, leaf = key.split(".")
        node = result
        for i, part in enumerate(parents):
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise ConfigError(f"cannot set '{key}': '{'.'.join(parents[:i + 1])}' is a value, not a section")
            node = child
        node[leaf] = value
    return result


def dumps_toml(data: Mapping[str, Any]) -> str:
    """A nested dict of str/int/float/bool/list values as TOML, written by `tomli-w` (any string, multi-line
    descriptions and quotes included, reads back equal with `tomllib`)."""
    import tomli_w

    return tomli_w.dumps(data)
