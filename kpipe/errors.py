"""Errors that mean "the user asked for something we cannot do", not "kpipe has a bug".

The CLI prints these as one line on stderr and exits with code 2, without a traceback.
Every message names the problem and, where there is one, the fix.
"""


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
