"""Errors that mean "the user asked for something we cannot do", not "kpipe has a bug".

The CLI prints these as one line on stderr and exits with code 2, without a traceback.
Every message names the problem and, where there is one, the fix.
"""

import difflib
from typing import Iterable


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """Return ` (did you mean 'x'?)` for the closest choice, or '' (the end of a message naming a mistake)."""
    match = difflib.get_close_matches(name, list(choices), n=1, cutoff=0.6)
    return f" (did you mean '{match[0]}'?)" if match else ""


class KpipeError(Exception):
    """Base class for user-facing errors (bad config, bad data, missing model)."""


class ConfigError(KpipeError):
    """A pipeline config or a `--set` override is invalid."""


class DataError(KpipeError):
    """A data source is missing, unreadable or unusable for the task."""


class MissingDependencyError(KpipeError):
    """An optional package is needed; the message says what to `pip install`."""


class ModelNotFoundError(KpipeError):
    """No exported model where the user pointed."""
