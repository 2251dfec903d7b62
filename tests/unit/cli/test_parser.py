"""The command line's parsing (no TensorFlow): options may come before or after a command's positional values."""

import pytest

from kpipe.cli.parser import build_parser, parse


@pytest.mark.parametrize("argv", [
    ["predict", "model", "--json", "great crew", "lost my bag"],
    ["predict", "model", "great crew", "lost my bag", "--json"],
    ["predict", "--json", "model", "great crew", "lost my bag"],
])
def test_options_before_or_after_the_texts(argv):
    args = parse(build_parser(), argv)
    assert (args.command, args.model, args.texts, args.json) == ("predict", "model", ["great crew", "lost my bag"],
                                                                  True)


def test_top_level_options_are_kept_and_unknown_options_still_refused(capsys):
    args = parse(build_parser(), ["-q", "embed", "model", "--json", "hello"])
    assert args.quiet and args.texts == ["hello"] and args.json
    with pytest.raises(SystemExit) as error:
        parse(build_parser(), ["predict", "model", "--bogus", "hello"])
    assert error.value.code == 2 and "unrecognized arguments: --bogus" in capsys.readouterr().err


@pytest.mark.parametrize("options, documents", [([], "lines"), (["--paragraphs"], "paragraphs"),
                                                (["--documents", "articles"], "articles")])
def test_kpipe_perplexity_reads_its_file_as_the_pipelines_data_documents_says(tmp_path, options, documents):
    from kpipe.datasets.documents import DOCUMENT_FORMS
    from kpipe.tasks.lm.predict import read_documents_file

    path = tmp_path / "wiki.txt"
    path.write_text(" = One = \nfirst\n\nsecond\n = Two = \nthird\n", encoding="utf-8")
    args = parse(build_parser(), ["perplexity", "model", "--file", str(path), *options])
    assert args.documents == documents
    choices = next(a.choices for a in build_parser()._subparsers._group_actions[0].choices["perplexity"]._actions
                   if a.dest == "documents" and a.choices)
    assert tuple(choices) == DOCUMENT_FORMS  # the parser's copy (it imports no data code) is the data config's list
    assert read_documents_file(args.file, documents=args.documents) == {
        "lines": [" = One = ", "first", "second", " = Two = ", "third"],
        "paragraphs": [" = One = \nfirst", "second\n = Two = \nthird"],
        "articles": [" = One = \nfirst\nsecond", " = Two = \nthird"]}[documents]
