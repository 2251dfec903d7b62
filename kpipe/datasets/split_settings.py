"""The split settings every data section that holds examples out shares (one group, not a copy per section),
without TensorFlow."""

from __future__ import annotations

import dataclasses

from kpipe.config.constraints import Checked, at_least, check_fractions_sum, fraction, setting


@dataclasses.dataclass(frozen=True, kw_only=True)
class SplitSettings(Checked):
    """How many examples a data section reads and how it holds some out (each section's docstring says of what:
    documents, articles, distinct names...).

    Args:
        limit: at most this many examples (0 = all).
        validation_fraction, test_fraction: shares held out for validation and for testing.
        seed: salts the shuffle or hash that makes the split: the same seed gives the same split.
    """

    limit: int = setting(0, at_least(0))
    validation_fraction: float = setting(0.1, fraction())
    test_fraction: float = setting(0.1, fraction())
    seed: int = 1337

    def __post_init__(self):
        super().__post_init__()
        check_fractions_sum(self.validation_fraction, self.test_fraction)

