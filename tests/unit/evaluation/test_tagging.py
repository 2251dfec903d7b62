"""Entity scores counted as conlleval counts them (pinned on a case worked by hand), and the two baselines."""

import pytest

from kpipe.evaluation.tagging import feature_crf, most_frequent_tag, tagging_metrics


def test_entity_scores_equal_a_hand_worked_case():
    """Gold: PER(0-1), LOC(3) | ORG(0). Predicted: PER(0-1), ORG(3) | an orphan I-ORG, which conlleval reads as an
    entity starting there: right. 2 of 3 predicted right, 2 of 3 gold found; 4 of 6 tags equal."""
    gold = [["B-PER", "I-PER", "O", "B-LOC"], ["B-ORG", "O"]]
    predicted = [["B-PER", "I-PER", "O", "B-ORG"], ["I-ORG", "O"]]
    metrics = tagging_metrics(gold, predicted)
    assert metrics["entity_precision"] == pytest.approx(2 / 3) and metrics["entity_recall"] == pytest.approx(2 / 3)
    assert metrics["entity_f1"] == pytest.approx(2 / 3) and metrics["token_accuracy"] == pytest.approx(4 / 6)
    assert metrics["per_type"]["ORG"] == {"precision": 0.5, "recall": 1.0, "f1": pytest.approx(2 / 3), "support": 1}
    assert metrics["per_type"]["LOC"]["recall"] == 0.0 and metrics["per_type"]["PER"]["f1"] == 1.0


def test_an_entity_with_one_end_wrong_counts_as_wrong():
    metrics = tagging_metrics([["B-PER", "I-PER", "O"]], [["B-PER", "O", "O"]])
    assert metrics["entity_f1"] == 0.0 and metrics["token_accuracy"] == pytest.approx(2 / 3)


def test_the_most_frequent_tag_of_each_word_and_o_for_unseen_words():
    train = [(["Paris", "is", "big"], ["B-LOC", "O", "O"]), (["Paris", "Hilton"], ["B-PER", "I-PER"]),
             (["Paris"], ["B-LOC"])]
    assert most_frequent_tag(train, [["Paris", "Hilton", "Rome"]]) == [["B-LOC", "I-PER", "O"]]


def test_the_feature_crf_learns_a_pattern_from_features():
    train = [([f"{name}", "visited", f"{city}"], ["B-PER", "O", "B-LOC"])
             for name in ("Ann", "Bob", "Cid", "Dee") for city in ("Oslo", "Rome", "Lima")]
    tags, seconds = feature_crf(train, [["Eve", "visited", "Kiev"]])
    assert tags == [["B-PER", "O", "B-LOC"]] and seconds >= 0  # unseen words, tagged by their position and shape
