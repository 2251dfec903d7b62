"""Tagged sentences: the CoNLL, JSON Lines and Parquet readers, the tag schemes (read as written, kept as IOB2),
the split by document, and every mistake as one line naming the file and the line."""

import gzip
import json

import pandas as pd
import pytest

from kpipe.datasets.tag_schemes import detect_scheme, entities, to_iob2
from kpipe.datasets.tagged import TaggedDataConfig, load_tagged
from kpipe.errors import DataError

CONLL = """-DOCSTART- -X- -X- O

EU NNP B-NP I-ORG
rejects VBZ B-VP O
German JJ B-NP I-MISC
call NN I-NP O

Peter NNP B-NP I-PER
Blackburn NNP I-NP I-PER

-DOCSTART- -X- -X- O

BRUSSELS NNP B-NP I-LOC
1996-08-22 CD I-NP O
"""


def write(tmp_path, text, name="train.txt"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def config(path, **kwargs):
    return TaggedDataConfig(source="file", path=str(path), **{"validation_fraction": 0.0, "test_fraction": 0.0,
                                                                **kwargs})


def test_conll_iob1_is_read_by_document_and_kept_as_iob2(tmp_path):
    path = write(tmp_path, CONLL)
    splits = load_tagged(config(path, test_path=str(write(tmp_path, CONLL, "test.txt"))))
    assert splits.scheme == "iob1" and splits.orphan_i_tags == 0  # I- starting an entity is IOB1's way
    assert splits.train[0] == (["EU", "rejects", "German", "call"], ["B-ORG", "O", "B-MISC", "O"])
    assert splits.train[1] == (["Peter", "Blackburn"], ["B-PER", "I-PER"])
    assert splits.tags == ["O", "B-LOC", "B-MISC", "B-ORG", "B-PER", "I-PER"]
    assert len(splits.test) == 3


def test_the_tag_column_picks_chunks_or_entities_and_gz_files_read_the_same(tmp_path):
    path = tmp_path / "train.txt.gz"
    path.write_bytes(gzip.compress(CONLL.encode("utf-8")))
    splits = load_tagged(config(path, tag_column=2, test_path=str(write(tmp_path, CONLL, "test.txt"))))
    assert splits.train[0][1] == ["B-NP", "B-VP", "B-NP", "I-NP"]


def test_the_split_keeps_a_documents_sentences_together(tmp_path):
    documents = "".join(f"-DOCSTART- O\n\nw{d}a O\nw{d}b B-PER\n\nw{d}c O\n\n" for d in range(40))
    splits = load_tagged(TaggedDataConfig(source="file", path=str(write(tmp_path, documents)), test_fraction=0.3,
                                          validation_fraction=0.0))
    for split in (splits.train, splits.test):
        documents_seen = {words[0][1:-1] for words, _ in split}
        assert all(sum(words[0][1:-1] == d for words, _ in split) == 2 for d in documents_seen)
    assert splits.test and splits.train


def test_bioes_and_orphan_i_tags_are_read_as_conlleval_reads_them():
    assert detect_scheme([["S-PER", "O", "B-LOC", "E-LOC"]]) == "bioes"
    assert to_iob2(["S-PER", "B-LOC", "I-LOC", "E-LOC"], "bioes") == (["B-PER", "B-LOC", "I-LOC", "I-LOC"], 0)
    assert to_iob2(["O", "I-PER", "I-PER", "I-LOC"], "iob2") == (["O", "B-PER", "I-PER", "B-LOC"], 2)
    assert entities(["B-PER", "I-PER", "B-PER", "O", "I-LOC", "I-ORG"]) == [("PER", 0, 2), ("PER", 2, 3),
                                                                            ("LOC", 4, 5), ("ORG", 5, 6)]


def test_json_lines_and_parquet_hold_tokens_and_tags(tmp_path):
    rows = [{"tokens": ["Ann", "sings"], "tags": ["B-PER", "O"]}, {"tokens": ["in", "Oslo"], "tags": ["O", "B-LOC"]}]
    jsonl = write(tmp_path, "".join(json.dumps(r) + "\n" for r in rows), "t.jsonl")
    pd.DataFrame(rows).to_parquet(tmp_path / "t.parquet")
    for path in (jsonl, tmp_path / "t.parquet"):
        splits = load_tagged(config(path, test_path=str(jsonl)))
        assert splits.train == [(r["tokens"], r["tags"]) for r in rows]


@pytest.mark.parametrize("text, name, kwargs, message", [
    ("EU B-ORG\nrejects VBZ O\n", "train.txt", {}, "train.txt:2: 3 columns, but the file's first line has 2"),
    ("EU B-ORG\nPeter PER\n", "train.txt", {"tag_scheme": "iob2"},
     "train.txt:2: tag 'PER' is not O or B-TYPE/I-TYPE (IOB2 tags)"),
    ("EU S-ORG\n", "train.txt", {"tag_scheme": "iob2"}, "train.txt:1: tag 'S-ORG' is not O or B-TYPE/I-TYPE"),
    ("\n\n", "train.txt", {}, "holds no sentences"),
    ('{"tokens": ["a", "b"], "tags": ["O"]}\n', "t.jsonl", {}, "row 1 has 2 tokens but 1 tags"),
    ("EU B-ORG\n", "train.txt", {"tag_column": 5}, "train.txt:1: data.tag_column=5, but the lines have 2 columns"),
])
def test_a_bad_file_is_one_line_naming_the_file_and_the_line(tmp_path, text, name, kwargs, message):
    path = write(tmp_path, text, name)
    with pytest.raises(DataError) as raised:
        load_tagged(config(path, test_path=str(path), **kwargs))
    assert message in str(raised.value) and "\n" not in str(raised.value)


def test_text_that_is_not_utf8_names_the_line(tmp_path):
    path = tmp_path / "train.txt"
    path.write_bytes("EU B-ORG\nK\xf6ln B-LOC\n".encode("latin-1"))
    with pytest.raises(DataError, match="train.txt is not valid utf-8 \\(line 2\\)"):
        load_tagged(config(path, test_path=str(path)))
