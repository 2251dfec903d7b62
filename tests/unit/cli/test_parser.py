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
