"""The `ensemble` model family: an n-gram member and sequence member(s), weighed on validation. `config.py` only:
its members are other families, each built by its own builder; `SPEC` below is what the task registry lists."""

from kpipe.families.ensemble.config import EnsembleClassifierConfig
from kpipe.families.spec import FamilySpec

SPEC = FamilySpec(
    "ensemble",
    config=EnsembleClassifierConfig,
    builder="",
    summary="an n-gram member + sequence member(s), weighed on validation (its members are the families above)",
    portable=True,
)
