"""`kpipe predict --file TABLE --column C --output FILE`: tables in every format kpipe reads, answers equal to
the Python API's, the input's columns kept, mistakes as one line with nothing written, atomic output."""

import json

import numpy as np
import pandas as pd
import pytest

from kpipe.cli import batch_predict
from kpipe.datasets.files import read_table
from kpipe.cli.commands import main
from kpipe.tasks.classify.predict import predict_texts

pytestmark = pytest.mark.slow

TEXTS = ["@united thank you so much, great crew!", "worst delay ever, lost my bag", "", "ok flight I guess"]


@pytest.fixture(scope="module")
def folder(tmp_path_factory, shared_run):
    # the tests write their tables beside it
    return shared_run("sentiment-bigrams").copy_to(tmp_path_factory.mktemp("batch"))


def expected_rows():
    found = predict_texts("sentiment-bigrams", TEXTS)
    return ([p.label for p in found], [p.probability for p in found],
            {name: [p.probabilities[name] for p in found] for name in found[0].probabilities})


@pytest.mark.parametrize("source, output", [("in.csv", "out.csv"), ("in.parquet", "out.jsonl"),
                                            ("in.jsonl", "out.parquet"), ("in.tsv.gz", "out.tsv")])
def test_a_table_in_gives_the_table_with_its_predictions_out(folder, monkeypatch, capsys, source, output):
    monkeypatch.chdir(folder)
    frame = pd.DataFrame({"id": [10, 11, 12, 13], "review": TEXTS, "stars": [5, 1, 3, 3]})
    if source.endswith(".parquet"):
        frame.to_parquet(source, index=False)
    elif source.endswith(".jsonl"):
        frame.to_json(source, orient="records", lines=True)
    else:
        frame.to_csv(source, sep="\t" if ".tsv" in source else ",", index=False)  # .gz: compressed by the name
    assert main(["predict", "sentiment-bigrams", "--file", source, "--column", "review", "--output", output]) == 0
    assert capsys.readouterr().out.strip() == f"Wrote 4 rows to {output}"
    result = read_table(output)
    labels, probabilities, by_class = expected_rows()
    assert [str(v) for v in result["id"]] == ["10", "11", "12", "13"]  # a text file's cells come back as text
    assert [str(v) for v in result["stars"]] == ["5", "1", "3", "3"]
    assert list(result["review"].fillna("")) == TEXTS
    assert list(result["label"]) == labels
    np.testing.assert_allclose(result["probability"], probabilities, rtol=1e-5)
    for name, values in by_class.items():
        np.testing.assert_allclose(result[f"probability_{name}"], values, rtol=1e-5)
    assert sorted(p.name for p in folder.iterdir() if p.name.startswith(f".{output}")) == []  # no temporary left


def test_plain_text_lines_and_arguments_can_be_written_as_a_table(folder, monkeypatch, capsys):
    """One row per input line: the blank line kept (as an empty text), a form feed and U+2028 inside a text not
    taken for line ends, a byte-order mark and Windows line ends removed."""
    monkeypatch.chdir(folder)
    texts = [*TEXTS[:2], "page\x0cbreak and a\u2028line separator", *TEXTS[2:]]
    (folder / "lines.txt").write_bytes(("\ufeff" + "\r\n".join(texts) + "\r\n").encode("utf-8"))
    assert main(["predict", "sentiment-bigrams", "--file", "lines.txt", "--output", "lines.jsonl"]) == 0
    rows = [json.loads(line) for line in (folder / "lines.jsonl").read_text(encoding="utf-8").split("\n") if line]
    assert [row["text"] for row in rows] == texts
    assert [row["label"] for row in rows] == [p.label for p in predict_texts("sentiment-bigrams", texts)]


def test_pass_through_columns_keep_what_was_written_and_an_output_is_never_replaced_silently(folder, monkeypatch,
                                                                                             capsys):
    monkeypatch.chdir(folder)
    (folder / "customers.csv").write_text("id,amount,text\n00123,0.10,great crew\n00045,1e3,lost my bag\n")
    assert main(["predict", "sentiment-bigrams", "--file", "customers.csv", "--output", "scored.csv"]) == 0
    written = (folder / "scored.csv").read_text().splitlines()
    assert [line.split(",")[:2] for line in written[1:]] == [["00123", "0.10"], ["00045", "1e3"]]
    before = (folder / "scored.csv").read_bytes()
    capsys.readouterr()
    assert main(["predict", "sentiment-bigrams", "--file", "customers.csv", "--output", "scored.csv"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--output scored.csv exists: pass --overwrite" in err[0], err
    assert (folder / "scored.csv").read_bytes() == before
    assert main(["predict", "sentiment-bigrams", "--file", "customers.csv", "--output", "scored.csv",
                 "--overwrite"]) == 0
    (folder / "a-folder.csv").mkdir()
    assert main(["predict", "sentiment-bigrams", "--file", "customers.csv", "--output", "a-folder.csv"]) == 2
    assert "is a folder: name a file in it" in capsys.readouterr().err


def test_a_column_named_like_an_answer_is_kept_beside_it(folder, monkeypatch):
    monkeypatch.chdir(folder)
    pd.DataFrame({"text": TEXTS[:2], "label": ["gold-pos", "gold-neg"]}).to_csv("gold.csv", index=False)
    assert main(["predict", "sentiment-bigrams", "--file", "gold.csv", "--output", "gold-out.csv"]) == 0
    result = pd.read_csv(folder / "gold-out.csv")
    assert list(result["label"]) == ["gold-pos", "gold-neg"]
    assert list(result["predicted_label"]) == expected_rows()[0][:2]


MISTAKES = {
    "missing column": (["--file", "two.csv", "--column", "body", "--output", "o.csv"],
                       "two.csv has no column 'body' (its columns: id, review); pass --column NAME"),
    "no text column": (["--file", "two.csv", "--output", "o.csv"],
                       "two.csv has several columns (id, review) and none is named 'text': pass --column NAME"),
    "not UTF-8": (["--file", "latin.csv", "--output", "o.csv"], "latin.csv is not valid utf-8"),
    "unknown output format": (["--file", "two.csv", "--column", "review", "--output", "o.xlsx"],
                              "cannot tell which format to write to o.xlsx: name it with one of .csv, .tsv, "
                              ".parquet, .jsonl"),
    "output is the input": (["--file", "two.csv", "--column", "review", "--output", "two.csv"],
                            "--output two.csv is the input file"),
    "output folder missing": (["--file", "two.csv", "--column", "review", "--output", "nowhere/o.csv"],
                              "folder nowhere does not exist"),
    "column of a text file": (["--file", "lines.txt", "--column", "review", "--output", "o.csv"],
                              "--column needs a table file"),
    "missing table": (["--file", "absent.csv", "--output", "o.csv"], "--file not found: absent.csv"),
    "texts and a table": (["great crew", "--file", "two.csv", "--column", "review", "--output", "o.csv"],
                          "give texts as arguments or in --file two.csv, not both"),
}


@pytest.mark.parametrize("case", MISTAKES)
def test_mistakes_are_one_line_exit_2_and_nothing_is_written(folder, monkeypatch, capsys, case):
    monkeypatch.chdir(folder)
    pd.DataFrame({"id": [1], "review": ["fine"]}).to_csv("two.csv", index=False)
    (folder / "latin.csv").write_bytes("text\ncafé\n".encode("latin-1"))
    (folder / "lines.txt").write_text("fine\n", encoding="utf-8")
    before = (folder / "two.csv").read_bytes()
    args, message = MISTAKES[case]
    assert main(["predict", "sentiment-bigrams", *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("kpipe: error: ") and message in err[0], err
    assert not (folder / "o.csv").exists() and (folder / "two.csv").read_bytes() == before


def test_a_failed_write_leaves_neither_a_partial_file_nor_a_temporary(tmp_path):
    frame = pd.DataFrame({"mixed": [1, "a"]})  # pyarrow cannot write a column of ints and strings
    with pytest.raises(Exception):
        batch_predict.write_table(frame, tmp_path / "out.parquet")
    assert list(tmp_path.iterdir()) == []



def test_the_written_table_has_the_permissions_of_an_ordinary_new_file(tmp_path):
    import os
    import stat

    old = os.umask(0o022)
    try:
        batch_predict.write_table(pd.DataFrame({"a": [1]}), tmp_path / "out.csv")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "out.csv").stat().st_mode) == 0o644  # not mkstemp's private 0600
