"""Scores for sequence outputs against one or more references: word/phoneme error rates, BLEU and chrF.

BLEU and chrF are sacreBLEU's (Post 2018): the figures translation papers report, computed on detokenized
strings with its own tokenization, so they compare across systems and tokenizers.

In grapheme-to-phoneme work a *word error* is a word whose output matches none of its reference
pronunciations; the *phoneme error rate* is the edit distance to the closest reference divided by
that reference's length, summed over words.
"""

from __future__ import annotations


def _edit_costs(a: list[str], b: list[str]) -> list[list[int]]:
    """Levenshtein table: cost[i][j] turns a[:i] into b[:j] (insertions, deletions, substitutions)."""
    cost = [[i + j if not (i and j) else 0 for j in range(len(b) + 1)] for i in range(len(a) + 1)]
    for i, x in enumerate(a, 1):
        for j, y in enumerate(b, 1):
            cost[i][j] = min(cost[i - 1][j] + 1, cost[i][j - 1] + 1, cost[i - 1][j - 1] + (x != y))
    return cost


def edit_distance(a: list[str], b: list[str]) -> int:
    """Levenshtein distance between two token lists (insertions, deletions, substitutions)."""
    return _edit_costs(a, b)[-1][-1]


def error_rates(hypotheses: list[list[str]], references: list[list[list[str]]]) -> dict[str, float]:
    """Word error rate and token (phoneme) error rate of `hypotheses[i]` against `references[i]` (a list
    of acceptable token lists for example i)."""
    if not hypotheses or len(hypotheses) != len(references):
        raise ValueError(f"need one list of references per hypothesis; got {len(hypotheses)} hypotheses and "
                         f"{len(references)} reference lists")
    wrong, errors, reference_tokens = 0, 0, 0
    for hypothesis, options in zip(hypotheses, references):
        distance, closest = min((edit_distance(hypothesis, r), r) for r in options)
        wrong += distance > 0
        errors += distance
        reference_tokens += len(closest)
    return {"word_error_rate": wrong / len(hypotheses), "token_error_rate": errors / max(1, reference_tokens)}


def reference_streams(references: list[list[str]]) -> list[list[str | None]]:
    """sacreBLEU's layout of references: stream k holds every sentence's k-th reference, None where a sentence
    has fewer (sacreBLEU skips those), so sentences may have one, two or five references each."""
    width = max((len(options) for options in references), default=0)
    return [[options[k] if k < len(options) else None for options in references] for k in range(width)]


def corpus_bleu(hypotheses: list[str], references: list[list[str]]) -> float:
    """Corpus BLEU (sacreBLEU's defaults: BLEU-4, its 13a tokenization, exponential smoothing), 0-100, of output
    strings against each sentence's list of references (any number each)."""
    from sacrebleu.metrics import BLEU

    _check(hypotheses, references)
    return float(BLEU().corpus_score(list(hypotheses), reference_streams(references)).score)


def corpus_chrf(hypotheses: list[str], references: list[list[str]]) -> float:
    """Corpus chrF (sacreBLEU's defaults: character 6-grams, beta 2), 0-100, against any number of references."""
    from sacrebleu.metrics import CHRF

    _check(hypotheses, references)
    return float(CHRF().corpus_score(list(hypotheses), reference_streams(references)).score)


def sentence_bleu(hypothesis: str, references: list[str]) -> float:
    """One sentence's BLEU (sacreBLEU's sentence-level smoothing), 0-100: to find the worst-translated ones."""
    from sacrebleu.metrics import BLEU

    return float(BLEU(effective_order=True).sentence_score(hypothesis, list(references)).score)


def _check(hypotheses: list[str], references: list[list[str]]) -> None:
    if not hypotheses or len(hypotheses) != len(references) or not all(references):
        raise ValueError(f"need at least one reference per hypothesis; got {len(hypotheses)} hypotheses and "
                         f"{len(references)} reference lists")


def alignment(hypothesis: list[str], reference: list[str]) -> list[tuple[str | None, str | None]]:
    """One minimal edit alignment as (reference token, hypothesis token) pairs: equal tokens and
    substitutions pair two tokens; a deletion is (token, None), an insertion (None, token)."""
    cost = _edit_costs(reference, hypothesis)
    pairs, i, j = [], len(reference), len(hypothesis)
    while i or j:  # walk back, preferring the diagonal (match or substitution)
        if i and j and cost[i][j] == cost[i - 1][j - 1] + (reference[i - 1] != hypothesis[j - 1]):
            pairs.append((reference[i - 1], hypothesis[j - 1]))
            i, j = i - 1, j - 1
        elif i and cost[i][j] == cost[i - 1][j] + 1:
            pairs.append((reference[i - 1], None))
            i -= 1
        else:
            pairs.append((None, hypothesis[j - 1]))
            j -= 1
    return pairs[::-1]


LENGTH_GROUPS = ((1, 4), (5, 7), (8, 10), (11, 10**9))


def error_analysis(sources: list[str], hypotheses: list[list[str]], references: list[list[list[str]]],
                   top: int = 20) -> dict:
    """Where the word errors are: the word error rate by source length (characters) and for sources with
    and without an apostrophe or a digit, and the `top` most frequent token confusions against each
    word's closest reference ("" stands for a missing token: (ref, "") deleted, ("", hyp) inserted)."""
    from collections import Counter

    length_names = [f"length {low}-{high}" if high < 10**9 else f"length {low}+" for low, high in LENGTH_GROUPS]
    order = [*length_names, "with an apostrophe", "without an apostrophe", "with a digit", "without a digit"]
    groups: dict[str, list[int]] = {group: [0, 0] for group in order}  # group -> [words, wrong], in print order
    confusions: Counter = Counter()

    def count(group: str, wrong: bool) -> None:
        groups[group][0] += 1
        groups[group][1] += wrong

    for source, hypothesis, options in zip(sources, hypotheses, references):
        distance, closest = min((edit_distance(hypothesis, r), r) for r in options)
        wrong = distance > 0
        count(next(name for name, (low, high) in zip(length_names, LENGTH_GROUPS) if low <= len(source) <= high),
              wrong)
        count("with an apostrophe" if "'" in source else "without an apostrophe", wrong)
        count("with a digit" if any(ch.isdigit() for ch in source) else "without a digit", wrong)
        confusions.update((ref or "", hyp or "") for ref, hyp in alignment(hypothesis, closest) if ref != hyp)
    return {"word_error_rate_by_group": {group: {"words": words, "word_error_rate": wrong / words}
                                         for group, (words, wrong) in groups.items() if words},
            "top_confusions": [{"reference": ref, "output": hyp, "count": n}
                               for (ref, hyp), n in confusions.most_common(top)]}
