"""Documents for language models: a document per line or per paragraph, tables by their text column, a chapter's
verses in one split, and one-line errors for files that hold no text."""

import gzip

import pandas as pd
import pytest

from kpipe.datasets.documents import DocumentsDataConfig, load_documents, read_bible_chapters, read_documents
from kpipe.datasets.splits import split_of_key
from kpipe.errors import DataError


def config(path, **kwargs):
    return DocumentsDataConfig(source="file", path=str(path), **kwargs)


def test_a_document_per_line_or_per_paragraph_kept_exactly(tmp_path):
    path = tmp_path / "corpus.txt.gz"
    path.write_bytes(gzip.compress("first  line\n\n second line \nthird\n\n\nfourth\n".encode()))
    assert read_documents(path, config(path)) == ["first  line", " second line ", "third", "fourth"]
    assert read_documents(path, config(path, documents="paragraphs")) == \
        ["first  line", " second line \nthird", "fourth"]
    crlf = tmp_path / "crlf.txt"  # lines end at "\n" (or "\r\n") only: a line separator inside a text stays in it
    crlf.write_bytes("one\u2028still one\x0cand one\r\ntwo\r\n".encode())
    assert read_documents(crlf, config(crlf)) == ["one\u2028still one\x0cand one", "two"]


def test_settings_for_the_other_kind_of_file_are_refused_not_ignored(tmp_path):
    with pytest.raises(ValueError, match="`text_column` is for tables"):
        config(tmp_path / "corpus.txt", text_column="body")
    for setting in ({"documents": "paragraphs"}, {"split_by": "article"}):
        with pytest.raises(ValueError, match="`documents` and `split_by` are for text files"):
            config(tmp_path / "docs.parquet", **setting)


def test_split_by_article_keeps_an_articles_paragraphs_in_one_split(tmp_path):
    lines = []
    for article in range(60):
        lines += [f" = Article {article} = ", *(f"article {article} paragraph {p}" for p in range(5)),
                  f" = = Section {article} = = ", f"article {article} closing"]
    (tmp_path / "wiki.txt").write_text("\n".join(lines) + "\n")
    documents = load_documents(config(tmp_path / "wiki.txt", split_by="article", validation_fraction=0.2,
                                      test_fraction=0.2))
    splits = {name: {text.split()[1] for text in getattr(documents, name) if text.startswith("article")}
              for name in ("train", "validation", "test")}
    assert all(splits.values()) and not (splits["train"] & splits["validation"]) and not (
        splits["train"] & splits["test"]) and not (splits["validation"] & splits["test"])
    by_line = load_documents(config(tmp_path / "wiki.txt", validation_fraction=0.2, test_fraction=0.2))
    assert {t.split()[1] for t in by_line.train if t.startswith("article")} & \
        {t.split()[1] for t in by_line.test if t.startswith("article")}  # by line, articles straddle the split


def test_a_document_per_article_reads_its_paragraphs_in_order_under_its_heading(tmp_path):
    path = tmp_path / "wiki.txt"
    path.write_text(" \n preamble \n = First = \n \n one \n = = Part = = \n two \n = Second = \n three \n")
    assert read_documents(path, config(path, documents="articles")) == [
        " preamble ", " = First = \n one \n = = Part = = \n two ", " = Second = \n three "]


def test_a_table_is_read_by_its_text_column_and_null_texts_are_refused(tmp_path):
    path = tmp_path / "docs.csv"
    pd.DataFrame({"body": ["one text", "another"]}).to_csv(path, index=False)
    assert read_documents(path, config(path, text_column="body")) == ["one text", "another"]
    with pytest.raises(DataError, match="has no column 'text'.*data.text_column"):
        read_documents(path, config(path))
    pd.DataFrame({"text": ["one", None, "three"]}).to_parquet(tmp_path / "docs.parquet")
    with pytest.raises(DataError, match="1 rows of column 'text' hold no text \\(first: row 2\\)"):
        read_documents(tmp_path / "docs.parquet", config(tmp_path / "docs.parquet"))


def test_an_empty_corpus_and_too_few_documents_are_one_line_errors(tmp_path):
    (tmp_path / "empty.txt").write_text("\n  \n\n")
    with pytest.raises(DataError, match="holds no text"):
        load_documents(config(tmp_path / "empty.txt"))
    (tmp_path / "two.txt").write_text("one\ntwo\n")
    with pytest.raises(DataError, match="2 documents: too few to split"):
        load_documents(config(tmp_path / "two.txt"))


def test_a_test_file_replaces_the_test_split(tmp_path):
    (tmp_path / "train.txt").write_text("\n".join(f"document {i}" for i in range(200)))
    (tmp_path / "test.txt").write_text("held out one\nheld out two\n")
    documents = load_documents(config(tmp_path / "train.txt", test_path=str(tmp_path / "test.txt")))
    assert documents.test == ["held out one", "held out two"]
    assert len(documents.train) + len(documents.validation) == 200 and documents.validation


def test_the_bibles_chapters_never_straddle_splits():
    chapters = read_bible_chapters()
    assert len({chapter for chapter, _ in chapters}) == 1189  # the Protestant canon's chapters
    assert all(verse.strip() == verse and verse for _, verse in chapters)
    assert chapters[0] == ("1:1", "In the beginning God created the heavens and the earth.")
    documents = load_documents(DocumentsDataConfig(limit=2000))
    by_split = {split: set(getattr(documents, split)) for split in ("train", "validation", "test")}
    for chapter, verse in chapters[:2000]:
        split = split_of_key(chapter, seed=1337, validation_fraction=0.05, test_fraction=0.05)
        assert verse in by_split[split]
