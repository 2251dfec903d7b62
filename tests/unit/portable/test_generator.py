"""The portable generator's NumPy sampling against the formula it implements, and its argument checks (the same
for a SavedModel and a portable export; the end-to-end checks are in tests/e2e/test_names_end_to_end.py)."""

import numpy as np
import pytest

from kpipe.errors import KpipeError
from kpipe.portable.generator import NEVER_SAMPLED, check_generate_arguments, sample_next


@pytest.mark.parametrize("temperature, top_k", [(1.0, 0), (0.5, 0), (2.0, 3), (1.0, 1)])
def test_draws_follow_the_softmax_at_the_temperature_among_the_top_k(temperature, top_k):
    logits = np.array([[3.0, 2.5, 1.0, 4.0, 0.5, 1.5, 0.0, 1.2]])  # ids 0, 1 and 3 (PAD, START, UNKNOWN): never
    allowed = np.array([i not in NEVER_SAMPLED for i in range(8)])
    scaled = np.where(allowed, logits[0] / temperature, -np.inf)
    if top_k:
        scaled[scaled < np.sort(scaled)[-top_k]] = -np.inf
    expected = np.exp(scaled - scaled.max()) / np.exp(scaled - scaled.max()).sum()
    draws = sample_next(np.repeat(logits, 40_000, axis=0), temperature, top_k, np.random.default_rng(0))
    frequencies = np.bincount(draws, minlength=8) / len(draws)
    np.testing.assert_allclose(frequencies, expected, atol=0.01)
    assert frequencies[list(NEVER_SAMPLED)].sum() == 0


SPEC = {"characters": list("abcdefghijklmnopqrstuvwxyz"), "categories": ["italy", "japan"], "max_length": 6,
        "lowercase": True}


def test_the_prefix_is_read_as_the_model_was_trained():
    assert check_generate_arguments(SPEC, prefix="Mar", count=1, temperature=1.0, category="", top_k=0) == "mar"


@pytest.mark.parametrize("arguments, message", [
    ({"count": 0}, "count must be > 0. Received: count=0"),
    ({"temperature": float("nan")}, "temperature must be > 0"),
    ({"top_k": -1}, "top_k must be >= 0 (0 = no top-k)"),
    ({"category": "itly"}, "unknown category 'itly' (did you mean 'italy'?); known: italy, japan"),
    ({"prefix": "Zoë"}, "has character(s) this model never saw: 'ë'"),
    ({"prefix": "abcdef"}, "the prefix is 6 characters; this model generates names up to 6"),
])
def test_each_bad_argument_is_named(arguments, message):
    given = {"prefix": "", "count": 3, "temperature": 1.0, "category": "", "top_k": 0, **arguments}
    with pytest.raises(KpipeError) as refused:
        check_generate_arguments(SPEC, **given)
    assert message in str(refused.value)
