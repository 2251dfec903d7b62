"""The Kneser-Ney trigram baseline: NLTK's `KneserNeyInterpolated` probabilities exactly, and a proper distribution
once the uniform floor covers tokens never seen."""

import math

import pytest
from nltk.lm import KneserNeyInterpolated
from nltk.lm.preprocessing import pad_both_ends

from kpipe.evaluation.kneser_ney import KneserNeyTrigram

SENTENCES = [s.split() for s in ("the cat sat on the mat", "the dog sat on the log", "a cat saw the dog",
                                 "the cat ran", "on the mat the dog sat")]


def padded(sentence):
    return list(pad_both_ends(sentence, n=3))


@pytest.mark.parametrize("discount", [0.1, 0.75])
def test_probabilities_equal_nltk_kneser_ney_interpolated(discount):
    reference = KneserNeyInterpolated(3, discount=discount)
    reference.fit([[g for n in (1, 2, 3) for g in zip(*[padded(s)[i:] for i in range(n)])] for s in SENTENCES],
                  [w for s in SENTENCES for w in padded(s)])
    ours = KneserNeyTrigram(discount=discount, nltk_compatible=True).fit(padded(s) for s in SENTENCES)
    vocabulary = sorted({w for s in SENTENCES for w in s} | {"</s>"})
    contexts = [("<s>", "<s>"), ("<s>", "the"), ("the", "cat"), ("on", "the"), ("sat", "on"), ("dog", "the"),
                ("mat", "cat")]  # the last two never seen together: backed off
    for context in contexts:
        for word in vocabulary:
            assert ours.probability(word, context) == pytest.approx(reference.score(word, list(context)), abs=1e-12), \
                (word, context)


def test_floored_model_is_a_distribution_over_the_vocabulary_and_scores_unseen_tokens():
    vocabulary = sorted({w for s in SENTENCES for w in s} | {"</s>", "<s>", "zebra", "unseen"})
    model = KneserNeyTrigram(discount=0.75, vocabulary_size=len(vocabulary)).fit(padded(s) for s in SENTENCES)
    for context in [("<s>", "<s>"), ("the", "cat"), ("mat", "cat"), ("zebra", "unseen")]:
        assert sum(model.probability(w, context) for w in vocabulary) == pytest.approx(1.0, abs=1e-9)
    assert model.probability("zebra", ("the", "cat")) > 0
    total = model.log_likelihood(padded("the zebra sat".split()))
    expected = sum(math.log(model.probability(w, c)) for w, c in
                   [("the", ("<s>", "<s>")), ("zebra", ("<s>", "the")), ("sat", ("the", "zebra")),
                    ("</s>", ("zebra", "sat")), ("</s>", ("sat", "</s>"))])
    assert total == pytest.approx(expected)
