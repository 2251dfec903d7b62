"""Error rates and BLEU against values worked out by hand."""

import pytest

from kpipe.sequence_metrics import corpus_bleu, edit_distance, error_rates


def test_edit_distance_known_values():
    assert edit_distance(list("kitten"), list("sitting")) == 3
    assert edit_distance([], list("abc")) == 3
    assert edit_distance(list("abc"), list("abc")) == 0


def test_word_and_phoneme_error_rates_use_the_closest_reference():
    hypotheses = [["T", "AH", "M", "EY", "T", "OW"], ["K", "AE", "T"], ["D", "AO"]]
    references = [[["T", "AH", "M", "EY", "T", "OW"], ["T", "AH", "M", "AA", "T", "OW"]],  # first matches
                  [["K", "AE", "T", "S"]],                                                # 1 deletion
                  [["D", "AO", "G"], ["D", "AA", "G"]]]                                   # 1 vs 2 edits
    rates = error_rates(hypotheses, references)
    assert rates["word_error_rate"] == pytest.approx(2 / 3)
    assert rates["token_error_rate"] == pytest.approx((0 + 1 + 1) / (6 + 4 + 3))


def test_bleu_is_one_for_exact_outputs_and_lower_otherwise():
    references = [["the cat sat on the mat today"], ["a dog ran in the park at noon"]]
    assert corpus_bleu(["the cat sat on the mat today", "a dog ran in the park at noon"], references) == \
        pytest.approx(1.0)
    assert corpus_bleu(["the cat sat on a mat today", "a dog ran in the park at noon"], references) < 0.9
