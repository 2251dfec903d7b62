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


def test_anki_files_give_pairs_split_by_source_with_every_translation_as_a_reference(tmp_path):
    import gzip

    lines = ["Go.\tVe.\tCC-BY 2.0 (France) Attribution: tatoeba.org #2877272 (CM) & #4986655 (cueyayotl)",
             "Go.\tVete.", "", "Who?\t¿Quién?\tattribution", "Wow!\t¡Órale!\tattribution"]
    lines += [f"I have {n} cats.\tTengo {n} gatos.\tattribution" for n in range(60)]
    path = tmp_path / "spa-eng.tsv.gz"
    path.write_bytes(gzip.compress("\n".join(lines).encode("utf-8")))
    splits = load_pairs(PairsDataConfig(source="file", path=str(path), format="anki", validation_fraction=0.1,
                                        test_fraction=0.3))
    everything = splits.train + splits.validation + splits.test
    assert ("Who?", "¿Quién?") in everything and ("Wow!", "¡Órale!") in everything and len(everything) == 64
    go = [name for name in ("train", "validation", "test") if ("Go.", "Ve.") in getattr(splits, name)]
    assert ("Go.", "Vete.") in getattr(splits, go[0])  # one source, one split
    if go[0] == "test":
        assert splits.references()["Go."] == ["Ve.", "Vete."]


@pytest.mark.parametrize("text, message", [
    ("Go.\tVe.\tattribution\textra\n", "line 1 has 3 tabs"),
    ("Go.\tVe.\nJust one column\n", "line 2 has one column"),
    ("\n\n", "has no sentence pairs"),
])
def test_broken_anki_files_are_one_line_naming_the_line(tmp_path, text, message):
    path = tmp_path / "pairs.txt"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(DataError, match=message):
        load_pairs(PairsDataConfig(source="file", path=str(path), format="anki"))
