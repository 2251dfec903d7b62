"""Scores for sequence outputs against one or more references: word/phoneme error rates, BLEU.

In grapheme-to-phoneme work a *word error* is a word whose output matches none of its reference
pronunciations; the *phoneme error rate* is the edit distance to the closest reference divided by
that reference's length, summed over words.
"""

from __future__ import annotations


def edit_distance(a: list[str], b: list[str]) -> int:
    """Levenshtein distance between two token lists (insertions, deletions, substitutions)."""
    previous = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        current = [i]
        for j, y in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (x != y)))
        previous = current
    return previous[-1]


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


def corpus_bleu(hypotheses: list[str], references: list[list[str]]) -> float:
    """Corpus BLEU-4 (keras-hub's `Bleu` metric) of output strings against reference strings."""
    import keras_hub

    bleu = keras_hub.metrics.Bleu(max_order=4)
    bleu.update_state(references, hypotheses)
    return float(bleu.result())
