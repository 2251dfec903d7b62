"""Exact match and F1 as the official SQuAD v1.1 script computes them (hand-worked cases of its rules), and the
sliding-window baseline."""

import pytest

from kpipe.datasets.questions import Question
from kpipe.evaluation.squad import (SlidingWindowBaseline, best_no_answer_threshold, exact_match, f1_score,
                                    normalize_answer, question_scores, squad_scores)


def question(answers, id="q", context="", text="") -> Question:
    return Question(id, text, context, tuple(answers), "article")


@pytest.mark.parametrize("raw, normalized", [
    ("The Cat!", "cat"),                       # lower case, punctuation and the article removed
    ("  an  apple,   a day ", "apple day"),    # articles anywhere, whitespace collapsed
    ("Theory of the Mind", "theory of mind"),  # "the" inside a word ("Theory") stays
    ("U.S.-born", "usborn"),                   # punctuation removed without a space
    ("café – déjà vu", "café – déjà vu"),      # only string.punctuation goes: the en dash stays, accents stay
])
def test_normalize_answer_follows_the_official_script(raw, normalized):
    assert normalize_answer(raw) == normalized


def test_f1_is_over_the_bags_of_normalized_words():
    assert f1_score("the cat sat", "a cat sat down") == pytest.approx(0.8)  # P = 2/2, R = 2/3
    assert f1_score("cat cat", "cat") == pytest.approx(2 * 0.5 * 1 / 1.5)  # a bag: the second "cat" matches nothing
    assert f1_score("dog", "cat") == 0.0
    assert f1_score("The", "cat") == 0.0  # nothing left of the prediction after normalising


def test_a_question_takes_its_best_gold_answer():
    q = question([("Denver Broncos", 0), ("the Broncos", 0), ("Broncos", 0)])
    assert question_scores(q, "Broncos") == {"exact_match": 1.0, "f1": 1.0}
    assert question_scores(q, "Denver") == {"exact_match": 0.0, "f1": pytest.approx(2 / 3)}
    assert exact_match("The Broncos.", "broncos") == 1.0


def test_unanswered_questions_score_zero_and_unanswerable_ones_want_no_answer():
    answerable, unanswerable = question([("gravity", 0)], id="a"), question([], id="b")
    scores = squad_scores([answerable, unanswerable], {"b": ""})  # "a" has no prediction
    assert scores == {"exact_match": 50.0, "f1": 50.0, "questions": 2}
    assert question_scores(unanswerable, "gravity") == {"exact_match": 0.0, "f1": 0.0}


def test_the_sliding_window_baseline_answers_next_to_the_questions_words():
    context = "Snow melts in spring . The capital of France is Paris , a large city on a river ."
    train = [question([("Paris", context.index("Paris"))], id=str(i), context=context,
                      text="What is the capital of France ?") for i in range(3)]
    baseline = SlidingWindowBaseline().fit(train)
    assert baseline.predict(train) == {str(i): "Paris" for i in range(3)}
    assert squad_scores(train, baseline.predict(train))["f1"] == 100.0
    start, end = baseline.answer("Which river is the city on ?", context)  # the words around "a river" and "city"
    assert "river" not in context[start:end] and "city" not in context[start:end]  # no question word in an answer


def test_the_no_answer_threshold_is_the_one_that_gives_the_best_f1():
    """Worked by hand. Diffs log(no answer / span): q1 log(0.1/0.5) = -1.609, q2 log(0.3/0.4) = -0.288, q3
    log(0.25/0.2) = 0.223. At 0: q1's span (1), q2's span where none is wanted (0), q3 no answer (0): 33.3. At
    -1.609: q2 and q3 answer "": 1 + 1 + 0 = 66.7, the best (at -0.288 and 0.223: 33.3; everything "": 33.3)."""
    questions = [question([("gravity", 0)], "q1"), question([], "q2"), question([("clouds", 0)], "q3")]
    chosen = best_no_answer_threshold(questions, ["gravity", "rain", "the sky"], [0.5, 0.4, 0.2], [0.1, 0.3, 0.25])
    assert chosen["threshold"] == pytest.approx(-1.6094, abs=1e-4)
    assert chosen["f1"] == pytest.approx(200 / 3) and chosen["f1_at_zero"] == pytest.approx(100 / 3)


def test_no_threshold_beats_zero_keeps_zero():
    questions = [question([("gravity", 0)], "q1"), question([], "q2")]
    chosen = best_no_answer_threshold(questions, ["gravity", "rain"], [0.5, 0.2], [0.1, 0.4])  # 0 gets both right
    assert chosen == {"threshold": 0.0, "f1": 100.0, "f1_at_zero": 100.0}
