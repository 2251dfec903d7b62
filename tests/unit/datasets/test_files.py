"""Compressed data files by name, in any case; a compression whose package is missing says what to install."""

import bz2
import gzip
import lzma

import pytest

from kpipe.datasets import files
from kpipe.errors import DataError

TEXT = "text,label\ncafé au lait,positive\n"


@pytest.mark.parametrize("name, compress", [("d.csv.gz", gzip.compress), ("d.CSV.GZ", gzip.compress),
                                            ("d.csv.bz2", bz2.compress), ("d.csv.xz", lzma.compress),
                                            ("d.csv", lambda b: b)])
def test_text_and_tables_are_decompressed_by_their_name_in_any_case(tmp_path, name, compress):
    path = tmp_path / name
    path.write_bytes(compress(TEXT.encode()))
    assert files.read_text(path) == TEXT
    assert files.read_table(path).to_dict("records") == [{"text": "café au lait", "label": "positive"}]


def test_zstandard_without_its_package_is_one_line_naming_it(tmp_path, monkeypatch):
    from kpipe import dependencies

    path = tmp_path / "d.csv.zst"
    path.write_bytes(b"\x28\xb5\x2f\xfd")
    monkeypatch.setattr(dependencies, "installed", lambda module: module != "zstandard")
    for read in (files.read_text, files.read_table):
        with pytest.raises(DataError, match="needs the zstandard package: pip install zstandard"):
            read(path)


def test_a_corrupt_archive_is_a_data_error_naming_the_file(tmp_path):
    path = tmp_path / "d.txt.gz"
    path.write_bytes(b"not gzip at all")
    with pytest.raises(DataError, match=r"cannot decompress .*d\.txt\.gz as gzip"):
        files.read_text(path)
