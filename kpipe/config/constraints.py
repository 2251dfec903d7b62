"""What values a config key accepts, declared once on the field and checked by one validator.

A field declared `units: tuple[int, ...] = setting((64,), layer_sizes())` carries its rule in its metadata:
`Checked.__post_init__` checks every field's rule when the config is made (from TOML, `--set` or Python), and the
configuration reference (`scripts/gen_docs.py`) prints each rule's `describe()`. Rules across fields (heads that
divide the width, fractions that sum below 1) stay in the class's own `__post_init__`, after `super().__post_init__()`.
No TensorFlow here: configs are checked before it loads.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Iterable

from kpipe.config.strict import DERIVED, check_choice, check_layer_sizes, check_range

RULE = "rule"  # the metadata key a field's rule is kept under


def _shown(value: Any) -> str:
    """A value as TOML writes it (double quotes), in backticks."""
    return f"`{value!r}`".replace("'", '"')


@dataclasses.dataclass(frozen=True)
class OneOf:
    """The value is one of `choices`; or of the class attribute named `attribute` (subclasses list their own)."""

    choices: tuple = ()
    attribute: str = ""

    def options(self, owner: type) -> tuple:
        return tuple(getattr(owner, self.attribute)) if self.attribute else self.choices

    def check(self, name: str, value: Any, owner: type) -> None:
        check_choice(name, value, self.options(owner))

    def describe(self, owner: type) -> str:
        return ", ".join(_shown(choice) for choice in self.options(owner))


@dataclasses.dataclass(frozen=True)
class Range:
    """low <= value <= high (either bound optional, each inclusive or not); NaN never is."""

    low: float | None = None
    high: float | None = None
    low_inclusive: bool = True
    high_inclusive: bool = True

    def check(self, name: str, value: Any, owner: type) -> None:
        check_range(name, value, low=self.low, high=self.high, low_inclusive=self.low_inclusive,
                    high_inclusive=self.high_inclusive)

    def describe(self, owner: type) -> str:
        parts = []
        if self.low is not None:
            parts.append(f"{'≥' if self.low_inclusive else '>'} {self.low}")
        if self.high is not None:
            parts.append(f"{'≤' if self.high_inclusive else '<'} {self.high}")
        return " and ".join(parts)


@dataclasses.dataclass(frozen=True)
class Each:
    """Every item of a list follows `rule`."""

    rule: Range

    def check(self, name: str, value: Any, owner: type) -> None:
        for item in value:
            self.rule.check(name, item, owner)

    def describe(self, owner: type) -> str:
        return f"each {self.rule.describe(owner)}"


@dataclasses.dataclass(frozen=True)
class OrAuto:
    """`auto` (a value that leaves the choice to kpipe, e.g. -1: chosen on validation) or a value that follows
    `rule`."""

    auto: Any
    rule: Range
    meaning: str

    def check(self, name: str, value: Any, owner: type) -> None:
        if value != self.auto:
            self.rule.check(name, value, owner)

    def describe(self, owner: type) -> str:
        return f"{_shown(self.auto)} ({self.meaning}) or {self.rule.describe(owner)}"


@dataclasses.dataclass(frozen=True)
class LayerSizes:
    """At least one layer size, each >= 1."""

    def check(self, name: str, value: Any, owner: type) -> None:
        check_layer_sizes(name, value)

    def describe(self, owner: type) -> str:
        return "at least one size, each ≥ 1"


def one_of(choices: Iterable[Any]) -> OneOf:
    return OneOf(tuple(choices))


def one_of_class(attribute: str) -> OneOf:
    """One of the tuple the config's class keeps under `attribute` (each subclass may list others)."""
    return OneOf(attribute=attribute)


def at_least(low: float) -> Range:
    return Range(low=low)


def above(low: float) -> Range:
    return Range(low=low, low_inclusive=False)


def between(low: float, high: float) -> Range:
    return Range(low=low, high=high)


def fraction() -> Range:
    """[0, 1): dropout, a share held out."""
    return Range(low=0.0, high=1.0, high_inclusive=False)


def open_fraction() -> Range:
    """(0, 1): a share that must hold something."""
    return Range(low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)


def each(rule: Range) -> Each:
    return Each(rule)


def or_auto(auto: Any, rule: Range, meaning: str) -> OrAuto:
    return OrAuto(auto, rule, meaning)


def layer_sizes() -> LayerSizes:
    return LayerSizes()


def check_fractions_sum(validation: float, test: float) -> None:
    """The rule across a data section's two held-out shares (each one's range is declared on its field)."""
    if validation + test >= 1.0:
        raise ValueError(f"`validation_fraction` + `test_fraction` must be < 1. Received: {validation} + {test}")


def setting(default: Any, rule=None, *, derived: bool = False) -> Any:
    """A config field with its default and its rule; `derived`: kpipe sets it from the data, a config file
    must not (the reference leaves it out)."""
    metadata = ({RULE: rule} if rule is not None else {}) | (DERIVED if derived else {})
    return dataclasses.field(default=default, metadata=metadata)


def group_default(group: type, name: str, default: Any, rule=None) -> Any:
    """A shared group's key `name` redeclared with a section's own default (and, where given, a narrower rule),
    keeping the group's rule otherwise: a bare `name: float = 0.05` in the subclass would drop it."""
    field = next(f for f in dataclasses.fields(group) if f.name == name)
    return setting(default, rule if rule is not None else rule_of(field))


def rule_of(field: dataclasses.Field):
    """The rule declared on `field`, or None."""
    return field.metadata.get(RULE)


def check_fields(config: Any) -> None:
    """Raise ValueError naming the first field of `config` whose value breaks its declared rule."""
    for field in dataclasses.fields(config):
        rule = rule_of(field)
        if rule is not None:
            rule.check(field.name, getattr(config, field.name), type(config))


class Checked:
    """Base of every config section: its fields' rules are checked when it is made. A subclass with rules across
    fields defines `__post_init__`, calling `super().__post_init__()` first."""

    def __post_init__(self) -> None:
        check_fields(self)
