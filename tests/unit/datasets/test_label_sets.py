"""Several labels per text from a file: sets in one column or 0/1 columns, rare labels dropped and named, and the
mistakes (no label at all, both ways at once, a label column that is not 0/1) one line each."""

import logging

import numpy as np
import pandas as pd
import pytest

from kpipe.tasks.named_pipelines import load_pipeline
from kpipe.datasets.text_classification import TextClassificationDataConfig, load_text_classification
from kpipe.errors import ConfigError, DataError

TOPICS = {"politics": "vote senate", "sports": "goal match", "tech": "chip code", "rare": "zebra"}


def write_sets(path, n=200, seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        labels = [t for t in ("politics", "sports", "tech") if rng.random() < 0.4] + (["rare"] if i < 3 else [])
        rows.append((f"news {i} " + " ".join(TOPICS[t] for t in labels), "|".join(labels)))
    pd.DataFrame(rows, columns=["text", "label"]).to_csv(path, index=False)
    return rows


def test_label_sets_become_a_matrix_and_rare_labels_are_dropped_by_name(tmp_path, caplog):
    rows = write_sets(tmp_path / "ml.csv")
    with caplog.at_level(logging.INFO):
        splits = load_text_classification(TextClassificationDataConfig(source="file", path=str(tmp_path / "ml.csv"),
                                                                       label_separator="|", min_label_count=5))
    assert splits.multi_label and splits.label_names == ("politics", "sports", "tech")
    assert "Dropped 1 label(s) with fewer than 5 training examples (data.min_label_count): rare" in caplog.text
    truth = {text: set(label.split("|")) - {"", "rare"} for text, label in rows}
    for examples in (splits.train, splits.validation, splits.test):
        assert examples.labels.shape == (len(examples), 3) and examples.labels.dtype == np.float32
        for text, row in zip(examples.texts, examples.labels):
            assert {n for n, on in zip(splits.label_names, row) if on} == truth[text]  # '' = no label, kept
    assert len(splits.train) + len(splits.validation) + len(splits.test) == len(rows)


def test_zero_one_label_columns_are_the_same_sets(tmp_path):
    rows = write_sets(tmp_path / "ml.csv")
    frame = pd.DataFrame({"comment": [t for t, _ in rows],
                          **{name: [int(name in label.split("|")) for _, label in rows] for name in TOPICS}})
    frame.to_csv(tmp_path / "columns.csv", index=False)
    by_sets = load_text_classification(TextClassificationDataConfig(source="file", path=str(tmp_path / "ml.csv"),
                                                                    label_separator="|"))
    by_columns = load_text_classification(TextClassificationDataConfig(
        source="file", path=str(tmp_path / "columns.csv"), text_column="comment",
        label_columns=("politics", "sports", "tech", "rare")))
    assert by_columns.label_names == by_sets.label_names
    np.testing.assert_array_equal(by_columns.train.labels, by_sets.train.labels)


@pytest.mark.parametrize("labels, message", [
    (["", "", ""] * 20, "holds no labels at all"),
    (["a", "a|b", ""] * 20, r"1 label\(s\) have at least 30 training examples; a multi-label classifier needs two"),
])
def test_too_few_labels_are_one_data_error(tmp_path, labels, message):
    pd.DataFrame({"text": [f"t {i}" for i in range(len(labels))], "label": labels}).to_csv(tmp_path / "d.csv",
                                                                                         index=False)
    if "1 label" in message:  # b occurs 20 times, a 40: keep only a
        config = TextClassificationDataConfig(source="file", path=str(tmp_path / "d.csv"), label_separator="|",
                                              min_label_count=30)
    else:
        config = TextClassificationDataConfig(source="file", path=str(tmp_path / "d.csv"), label_separator="|")
    with pytest.raises(DataError, match=message):
        load_text_classification(config)


def test_a_label_column_that_is_not_zero_or_one_names_the_column_and_value(tmp_path):
    pd.DataFrame({"text": ["a", "b"], "toxic": [0, 2], "insult": [1, 0]}).to_csv(tmp_path / "d.csv", index=False)
    with pytest.raises(DataError, match="label column 'toxic' of file:.*d.csv holds 2; a label column holds 0 or 1"):
        load_text_classification(TextClassificationDataConfig(source="file", path=str(tmp_path / "d.csv"),
                                                              label_columns=("toxic", "insult")))


@pytest.mark.parametrize("overrides, message", [
    (['data.label_separator="|"', 'data.label_columns=["a", "b"]'], "set one of `label_separator`"),
    (['data.label_columns=["a", "a"]'], "`label_columns` must be distinct"),
    (["evaluation.threshold=1.5"], "`threshold` must be > 0.0 and < 1.0"),
    (['evaluation.thresholds="best"'], "thresholds"),
    (['training.early_stopping_monitor="val_micro_f1"'], "is logged with several labels per text only"),
])
def test_config_mistakes_name_the_key(overrides, message):
    with pytest.raises(ConfigError, match=message):
        load_pipeline("sentiment-bigrams", ['data.source="file"', 'data.path="x.csv"', *overrides])


def test_a_single_label_column_that_looks_like_sets_gets_one_warning_naming_the_separator(tmp_path, caplog):
    write_sets(tmp_path / "ml.csv", n=300)
    with caplog.at_level(logging.WARNING):
        load_text_classification(TextClassificationDataConfig(source="file", path=str(tmp_path / "ml.csv")))
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "data.label_separator='|'" in warnings[0]
