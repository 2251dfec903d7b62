"""CMUdict and pair files: parsing, stress, split by word, references, mistakes."""

import pytest

from kpipe.datasets.pairs import PairsDataConfig, load_pairs, read_cmudict
from kpipe.errors import DataError


def test_cmudict_alternates_share_the_word_and_stress_is_removed():
    pairs = read_cmudict()
    assert len(pairs) == 135166
    assert ("aalborg", "AA L B AO R G") in pairs and ("aalborg", "AO L B AO R G") in pairs  # "(2)" and "# ..." gone
    assert ("aalborg", "AO1 L B AO0 R G") in read_cmudict(keep_stress=True)


def test_split_is_by_word_deterministic_and_keeps_every_pronunciation_as_a_reference():
    splits = load_pairs(PairsDataConfig(limit=3000))
    words = {name: {s for s, _ in getattr(splits, name)} for name in ("train", "validation", "test")}
    assert not (words["train"] & words["test"]) and not (words["train"] & words["validation"])
    assert load_pairs(PairsDataConfig(limit=3000)).test == splits.test
    references = splits.references("test")
    assert sum(len(r) for r in references.values()) == len(splits.test)
    assert 2500 < sum(len(w) for w in words.values()) <= 3000


def test_pair_file_with_named_columns(tmp_path):
    path = tmp_path / "pairs.tsv"
    path.write_text("de\ten\n" + "".join(f"wort{i}\tword{i}\n" for i in range(50)), encoding="utf-8")
    splits = load_pairs(PairsDataConfig(source="file", path=str(path), source_column="de", target_column="en"))
    assert ("wort3", "word3") in splits.train + splits.validation + splits.test


def test_missing_column_names_the_columns_and_the_fix(tmp_path):
    path = tmp_path / "pairs.csv"
    path.write_text("src,tgt\na,b\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"no column 'source'.*columns: src, tgt.*data.source_column"):
        load_pairs(PairsDataConfig(source="file", path=str(path)))


def test_unknown_embedded_name_suggests_cmudict():
    with pytest.raises(DataError, match="did you mean 'cmudict'"):
        load_pairs(PairsDataConfig(name="cmudic"))
