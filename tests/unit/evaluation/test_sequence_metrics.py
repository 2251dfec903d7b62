"""Error rates, BLEU and chrF against values worked out by hand."""

import numpy as np
import pytest

from kpipe.evaluation.sequence_metrics import corpus_bleu, corpus_chrf, edit_distance, error_rates


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


def test_bleu_is_the_geometric_mean_of_clipped_ngram_precisions_on_a_worked_example():
    references = [["the cat sat on the mat today"], ["a dog ran in the park at noon"]]
    assert corpus_bleu(["the cat sat on the mat today", "a dog ran in the park at noon"], references) == \
        pytest.approx(100.0)
    # "the cat sat on a mat today": 6 of 7 unigrams, 4 of 6 bigrams, 2 of 5 trigrams, 1 of 4 4-grams; same length
    expected = 100 * np.exp(np.mean(np.log([6 / 7, 4 / 6, 2 / 5, 1 / 4])))
    assert corpus_bleu(["the cat sat on a mat today"], references[:1]) == pytest.approx(expected, abs=0.01)


def test_sentences_may_have_one_two_or_five_references():
    hypotheses = ["the cat sat on a mat today", "¿Dónde está la estación?", "Tom is here."]
    references = [["the cat sat on the mat today"],
                  ["¿Dónde queda la estación?", "¿Dónde está la estación de tren?"],
                  ["Tom está aquí.", "Aquí está Tom.", "Tom anda por aquí.", "Tom is here.", "Tom llegó."]]
    bleu, chrf = corpus_bleu(hypotheses, references), corpus_chrf(hypotheses, references)
    assert 0 < bleu < 100 and 0 < chrf < 100
    # a sentence's exact reference makes its other references irrelevant: the same as giving it alone
    alone = [*references[:2], ["Tom is here."]]
    assert bleu == pytest.approx(corpus_bleu(hypotheses, alone))
    assert chrf == pytest.approx(corpus_chrf(hypotheses, alone))
    assert corpus_bleu(hypotheses, [references[0], references[1][:1], references[2][:1]]) < bleu  # fewer: lower
    with pytest.raises(ValueError, match="at least one reference per hypothesis"):
        corpus_bleu(hypotheses, [references[0], [], references[2]])


def test_alignment_pairs_matches_substitutions_deletions_and_insertions():
    from kpipe.evaluation.sequence_metrics import alignment

    assert alignment("K AE T".split(), "K AE T".split()) == [("K", "K"), ("AE", "AE"), ("T", "T")]
    assert alignment("K EH T".split(), "K AE T".split()) == [("K", "K"), ("AE", "EH"), ("T", "T")]
    assert alignment("K T".split(), "K AE T".split()) == [("K", "K"), ("AE", None), ("T", "T")]
    assert alignment("K AE T S".split(), "K AE T".split()) == [("K", "K"), ("AE", "AE"), ("T", "T"), (None, "S")]
    assert alignment([], ["A"]) == [("A", None)] and alignment(["B"], []) == [(None, "B")]


def test_error_analysis_by_hand():
    from kpipe.evaluation.sequence_metrics import error_analysis

    sources = ["cat", "o'neil", "b52", "elephants"]
    hypotheses = [["K", "AE", "T"], ["OW", "N", "IY", "L"], ["B", "IY", "F"], ["EH", "L", "AH", "F", "AH", "N", "T"]]
    references = [[["K", "AE", "T"]], [["OW", "N", "IY", "L"]], [["B", "IY", "F", "IH", "F", "T", "IY", "T", "UW"]],
                  [["EH", "L", "AH", "F", "AH", "N", "T", "S"], ["EH", "L", "IH", "F", "AH", "N", "T", "S"]]]
    report = error_analysis(sources, hypotheses, references, top=10)
    groups = report["word_error_rate_by_group"]
    assert groups["length 1-4"] == {"words": 2, "word_error_rate": 0.5}    # cat right, b52 wrong
    assert groups["length 5-7"] == {"words": 1, "word_error_rate": 0.0}    # o'neil
    assert groups["length 8-10"] == {"words": 1, "word_error_rate": 1.0}   # elephants: S missing
    assert groups["with an apostrophe"] == {"words": 1, "word_error_rate": 0.0}
    assert groups["without an apostrophe"]["word_error_rate"] == 2 / 3
    assert groups["with a digit"] == {"words": 1, "word_error_rate": 1.0}
    # b52 lost six phonemes (IH F T IY T UW: T twice), elephants its S against the closest reference (with AH)
    confusions = {(c["reference"], c["output"]): c["count"] for c in report["top_confusions"]}
    assert confusions == {("T", ""): 2, ("IH", ""): 1, ("F", ""): 1, ("IY", ""): 1, ("UW", ""): 1, ("S", ""): 1}
    assert report["top_confusions"][0] == {"reference": "T", "output": "", "count": 2}
