import pytest

from kpipe.datasets.names import NamesDataConfig, load_names, read_nam_dict
from kpipe.errors import DataError


def test_nam_dict_gives_real_names_by_country():
    pairs = read_nam_dict()
    assert ("Aad", "the_netherlands") in pairs and ("Ådne", "norway") in pairs
    assert len({country for _, country in pairs}) == 55
    assert len({name for name, _ in pairs}) > 40000


def test_split_is_by_name_and_deterministic():
    splits = load_names(NamesDataConfig())
    names = {split: {n for n, _ in getattr(splits, split)} for split in ("train", "validation", "test")}
    assert not names["train"] & names["test"] and not names["train"] & names["validation"]
    assert load_names(NamesDataConfig()).test == splits.test
    assert 0.07 < len(splits.test) / sum(splits.sizes().values()) < 0.13


def test_category_filter_and_unknown_category(tmp_path):
    splits = load_names(NamesDataConfig(categories=("italy", "japan")))
    assert splits.categories == ["italy", "japan"]
    with pytest.raises(DataError, match=r"unknown category itally \(did you mean 'italy'\?\); known: albania"):
        load_names(NamesDataConfig(categories=("itally",)))


def test_text_and_table_files(tmp_path):
    (tmp_path / "names.txt").write_text("".join(f"Name{i}\t{'a' if i % 2 else 'b'}\n" for i in range(60)))
    splits = load_names(NamesDataConfig(source="file", path=str(tmp_path / "names.txt")))
    assert splits.categories == ["a", "b"] and sum(splits.sizes().values()) == 60
    (tmp_path / "names.csv").write_text("surname\n" + "".join(f"Smith{i}\n" for i in range(40)))
    splits = load_names(NamesDataConfig(source="file", path=str(tmp_path / "names.csv"), name_column="surname"))
    assert splits.categories == [] and sum(splits.sizes().values()) == 40
    with pytest.raises(DataError, match="has no column 'name'"):
        load_names(NamesDataConfig(source="file", path=str(tmp_path / "names.csv")))
