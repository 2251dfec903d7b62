"""Exact match and F1 as the official SQuAD v1.1 evaluation script computes them, and the sliding-window baseline
of the SQuAD paper, fitted and scored on the same split as the model.

The script's rules: lower case, punctuation (`string.punctuation`) removed, the articles a/an/the removed,
whitespace collapsed; F1 over the bags of remaining words; the best over a question's gold answers; a question
without a prediction scores 0. A question without gold answers (SQuAD v2.0's unanswerable ones) scores 1 for an
empty prediction and 0 otherwise, as the v2.0 script does.
"""

from __future__ import annotations

import math
import re
import string
from collections import Counter
from typing import Iterable, Mapping

import numpy as np

from kpipe.datasets.questions import Question

PUNCTUATION = set(string.punctuation)


def normalize_answer(text: str) -> str:
    text = "".join(ch for ch in text.lower() if ch not in PUNCTUATION)
    return " ".join(re.sub(r"\b(a|an|the)\b", " ", text).split())


def f1_score(prediction: str, gold: str) -> float:
    predicted, expected = normalize_answer(prediction).split(), normalize_answer(gold).split()
    if not predicted or not expected:  # v2.0's rule for "no answer" (v1.1 would divide by zero only here)
        return float(predicted == expected)
    same = sum((Counter(predicted) & Counter(expected)).values())
    if not same:
        return 0.0
    precision, recall = same / len(predicted), same / len(expected)
    return 2 * precision * recall / (precision + recall)


def exact_match(prediction: str, gold: str) -> float:
    return float(normalize_answer(prediction) == normalize_answer(gold))


def gold_texts(question: Question) -> list[str]:
    return [text for text, _ in question.answers] or [""]


def question_scores(question: Question, prediction: str | None) -> dict:
    """EM and F1 (0 or 1 and a fraction) of one prediction, the best over the gold answers; None scores 0."""
    if prediction is None:
        return {"exact_match": 0.0, "f1": 0.0}
    golds = gold_texts(question)
    return {"exact_match": max(exact_match(prediction, g) for g in golds),
            "f1": max(f1_score(prediction, g) for g in golds)}


def squad_scores(questions: Iterable[Question], predictions: Mapping[str, str]) -> dict:
    """{"exact_match", "f1"} in percent over `questions` (a question `predictions` lacks scores 0), and their
    count."""
    total = em = f1 = 0.0
    for question in questions:
        scores = question_scores(question, predictions.get(question.id))
        total, em, f1 = total + 1, em + scores["exact_match"], f1 + scores["f1"]
    return {"exact_match": 100 * em / max(total, 1), "f1": 100 * f1 / max(total, 1), "questions": int(total)}


def best_no_answer_threshold(questions: list[Question], spans: list[str], span_scores: list[float],
                             no_answer_scores: list[float]) -> dict:
    """The threshold τ on log(no-answer probability) - log(best span probability) above which a question is answered
    "" that gives the highest F1 over `questions` (SQuAD v2.0 systems choose it on the development set: BERT's
    `null_score_diff_threshold`, the official script's best_f1_thresh). Each question's best span and the two
    probabilities come from the model; τ = 0 is the untuned rule (no answer when the [CLS] pair beats the span).

    Returns:
        {"threshold": τ (0.0 when no τ does better than 0), "f1": F1 in percent at τ, "f1_at_zero": at τ = 0}.
    """
    diffs = np.log(np.maximum(no_answer_scores, 1e-30)) - np.log(np.maximum(span_scores, 1e-30))
    with_span = np.array([question_scores(q, s)["f1"] for q, s in zip(questions, spans)])
    without = np.array([question_scores(q, "")["f1"] for q in questions])

    def f1_at(threshold: float) -> float:  # answered "" where the diff is above the threshold
        return 100 * float(np.where(diffs > threshold, without, with_span).sum()) / max(len(questions), 1)

    best, best_f1 = 0.0, f1_at(0.0)
    for threshold in sorted(set(diffs.tolist())):  # F1 changes only at a question's own diff
        if f1_at(threshold) > best_f1 + 1e-12:
            best, best_f1 = float(threshold), f1_at(threshold)
    if f1_at(-np.inf) > best_f1 + 1e-12:  # every question answered ""
        best, best_f1 = float(diffs.min()) - 1.0, f1_at(-np.inf)
    return {"threshold": best, "f1": best_f1, "f1_at_zero": f1_at(0.0)}


# === The sliding-window baseline ===

WORD = re.compile(r"\w+|[^\w\s]")


def words_with_offsets(text: str) -> list[tuple[str, int, int]]:
    return [(m.group().lower(), m.start(), m.end()) for m in WORD.finditer(text)]


class SlidingWindowBaseline:
    """The lexical baseline of the SQuAD paper (Rajpurkar et al. 2016), after Richardson et al. (2013): every span
    of `span_words` words of the context is a candidate (spans that hold a question word or start or end on
    punctuation are not); a candidate scores the inverse counts, log(1 + 1/count), of the distinct question words
    found among the `window` words on either side of it; the best candidate is the answer (the first on ties).
    The word counts come from the training contexts; `span_words` and `window` are chosen on the training split.
    """

    SPAN_WORDS = (1, 2, 3, 4)
    WINDOWS = (3, 5, 10, 20)
    FIT_QUESTIONS = 2000  # training questions the settings are chosen on

    def __init__(self):
        self.counts: Counter = Counter()
        self.span_words, self.window = 1, 5

    def fit(self, train: list[Question]) -> "SlidingWindowBaseline":
        for context in {q.context for q in train}:
            self.counts.update(w for w, _, _ in words_with_offsets(context))
        sample = train[:self.FIT_QUESTIONS]
        best = -1.0
        for span_words in self.SPAN_WORDS:
            for window in self.WINDOWS:
                self.span_words, self.window = span_words, window
                f1 = squad_scores(sample, self.predict(sample))["f1"]
                if f1 > best:
                    best, chosen = f1, (span_words, window)
        self.span_words, self.window = chosen
        return self

    def weight(self, word: str) -> float:
        return math.log(1 + 1 / (self.counts[word] + 1))  # +1: a word the training contexts never had

    def answer(self, question: str, context: str) -> tuple[int, int]:
        """The character span (start, end) of the best candidate, or (0, 0) for a context too short."""
        words = words_with_offsets(context)
        asked = {w for w, _, _ in words_with_offsets(question)}
        n, k = len(words), self.span_words
        if n < k:
            return 0, 0
        found = np.array([w in asked for w, _, _ in words])
        candidates = np.lib.stride_tricks.sliding_window_view(found, k).any(axis=1)  # (n - k + 1,)
        edges = np.array([not re.match(r"\w", w) for w, _, _ in words])
        allowed = ~candidates & ~edges[:n - k + 1] & ~edges[k - 1:]
        scores = np.full(n - k + 1, -1.0)
        for start in np.flatnonzero(allowed):
            around = words[max(0, start - self.window):start] + words[start + k:start + k + self.window]
            scores[start] = sum(self.weight(w) for w in {w for w, _, _ in around if w in asked})
        start = int(np.argmax(scores))
        return words[start][1], words[start + k - 1][2]

    def predict(self, questions: list[Question]) -> dict[str, str]:
        answers = {}
        for q in questions:
            start, end = self.answer(q.question, q.context)
            answers[q.id] = q.context[start:end]
        return answers
