"""Large bodies parsed, and large answers rendered, in pieces (reliability finding 13): the same values and errors
as one `json.loads` / `json.dumps`, with no call given more than a piece of the text."""

import json
import random

import pytest

from kpipe.serving import json_pieces, rest
from kpipe.serving.app import JSONResponse

ALPHABET = ["a", " ", '"', "\\", "\n", "é", "😀", ",", ":", "[", "]", "{", "}", "\\\\", "\u0000", "\t"]


def random_value(rng, depth=0):
    roll = rng.random()
    if depth > 3 or roll < 0.4:
        text = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 12)))
        return rng.choice([text, rng.randint(-10**6, 10**6), rng.random(), None, True, False, 10**30, -0.0])
    if roll < 0.7:
        return [random_value(rng, depth + 1) for _ in range(rng.randint(0, 12))]
    return {"".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 6))): random_value(rng, depth + 1)
            for _ in range(rng.randint(0, 6))}


@pytest.mark.slow  # 960 parses in pieces (6 s)
def test_pieces_give_exactly_what_one_parse_gives():
    rng = random.Random(0)
    for _ in range(80):
        value = random_value(rng)
        for options in ({}, {"indent": 1}, {"ensure_ascii": False}, {"separators": (",", ":")}):
            data = json.dumps(value, **options).encode("utf-8")
            for piece, block in ((8, 13), (40, 3), (300, 1 << 20)):  # small blocks: the scan's state carried
                got = json_pieces.loads(data, piece, block)
                assert json.dumps(got) == json.dumps(json.loads(data)), (data, piece, block)


def test_no_call_parses_more_than_a_piece_of_a_large_body(monkeypatch):
    # an escaped quote, a comma and unbalanced brackets inside strings, and strings ending in backslashes
    texts = [f'tweet {i}: she said "no, ] {{, {"no, " * (i % 7)}' + "\\" * (i % 3) for i in range(40_000)]
    body = json.dumps({"signature_name": "serve", "instances": texts,
                       "inputs_as_rows": [[i, i + 1, [i, {"k": str(i)}]] for i in range(10_000)]}).encode()
    parsed, real = [], json.loads
    monkeypatch.setattr(json_pieces.json, "loads", lambda text: (parsed.append(len(text)), real(text))[1])
    got = json_pieces.loads(body, 64 * 1024, block_bytes=4099)  # backslash runs and strings across blocks
    assert got == real(body)
    assert len(parsed) > 10 and max(parsed) <= 64 * 1024 + 2, (len(parsed), max(parsed))  # "[" + piece + "]"


@pytest.mark.parametrize("body", [
    b'{"instances": ["a", "b", ' * 1 + b'"c"',                         # cut short
    b'{"instances": [' + b'"x", ' * 5000 + b'"y",]}',                     # a trailing comma
    b'{"instances": [' + b'"x", ' * 5000 + b'\\"y"]}',                    # a backslash outside a string
    b'{"instances": [' + b'"x", ' * 5000 + b'"y"]]}',                     # an extra bracket
    b'{"instances": [' + b'"x\\", ' * 5000 + b'"y"]}',                    # escaped quotes: one long string, unclosed
    b'{"a" "b": [' + b'1, ' * 5000 + b'2]}',                              # a missing colon
    b'{"instances": [' + b'1, ' * 5000 + b'2]} {}',                       # two values
])
def test_invalid_json_gets_the_message_one_parse_gives(body):
    with pytest.raises(json.JSONDecodeError) as whole:
        json.loads(body)
    with pytest.raises(json.JSONDecodeError) as pieces:
        json_pieces.loads(body, 256)
    assert str(pieces.value) == str(whole.value)


def test_a_number_python_refuses_is_a_value_error_in_pieces_too():
    body = b'{"instances": [' + b'1, ' * 5000 + b'1' * 5000 + b']}'
    with pytest.raises(rest.BadRequest, match="holds a number Python will not read"):
        rest.parse_body(body)


def test_utf8_is_checked_in_pieces_and_the_bad_byte_named_where_one_decode_names_it():
    rng = random.Random(1)
    for _ in range(2000):
        data = bytearray("".join(rng.choice("aé😀€ ") for _ in range(rng.randint(0, 40))).encode())
        if data and rng.random() < 0.7:
            data[rng.randrange(len(data))] = rng.choice([0x80, 0xFF, 0xC3, 0xE2, 0xF0])
        try:
            bytes(data).decode("utf-8")
            expected = None
        except UnicodeDecodeError as error:
            expected = error.start
        for piece in (1, 2, 3, 7, 64):
            try:
                json_pieces.check_utf8(bytes(data), piece)
                got = None
            except UnicodeDecodeError as error:
                got = error.start
            assert got == expected, (bytes(data), piece)


def one_render(value) -> bytes:
    """What the server rendered with one call (and TF Serving's clients read)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def test_answers_rendered_in_slices_are_the_bytes_one_render_gives():
    rng = random.Random(0)
    for _ in range(300):
        value = {"predictions": random_value(rng)}
        for step in (1, 3, 50):
            assert json_pieces.dumps(value, step) == one_render(value)
    value = {"predictions": [{"label": "pos", "probabilities": [0.25, float("nan")]}] * 10_000}
    assert json_pieces.dumps(value) == JSONResponse(value).body == one_render(value)  # errors and listings too


def test_a_parsed_body_is_emptied_a_slice_at_a_time():
    body = {"signature_name": "serve", "instances": [f"t{i}" for i in range(50_000)],
            "inputs": {"ids": [[i, i + 1] for i in range(30_000)], "text": ["a"] * 10}}
    rows, ids = body["instances"], body["inputs"]["ids"]
    sizes = []
    real_delitem = list.__delitem__

    class Watched(list):
        def __delitem__(self, key):
            sizes.append(len(self[key]))
            real_delitem(self, key)

    body["instances"], body["inputs"]["ids"] = Watched(rows), Watched(ids)
    json_pieces.release(body, items_per_piece=4096)
    assert body["instances"] == [] and body["inputs"]["ids"] == [] and body["inputs"]["text"] == []
    assert body["signature_name"] == "serve" and max(sizes) <= 4096 and len(sizes) > 20
    assert 4096 in sizes and 2048 in sizes  # rows of two ids: half as many at a time


@pytest.mark.parametrize("levels", [3, 4])
def test_the_depth_limit_reads_the_same_in_pieces_as_walking_the_parsed_value(levels):
    """Nested four levels deep (the object, its list of rows, a row, the row's list and object): a large body's
    depth is read off its scan, a small one's by walking it."""
    row = json.dumps([[["x", "]]]]"], {"k": "[[["}]] * 2000)  # brackets in strings do not count
    body = ('{"instances": ' + row + "}").encode()
    for piece in (256, 1 << 20):  # in pieces, and whole
        if levels >= 4:
            assert json_pieces.loads(body, piece, max_depth=levels)["instances"] == json.loads(row)
        else:
            with pytest.raises(json_pieces.TooDeep):
                json_pieces.loads(body, piece, max_depth=levels)
