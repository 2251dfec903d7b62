"""What one request may ask of the server: integers that fit their dtype (never wrapped), JSON nested no deeper
than any signature takes, and rows (or a generator's count) up to the server's limit."""

import pytest

from kpipe.serving import rest
from kpipe.serving.signatures import saved_model_signature


@pytest.fixture(scope="module")
def signatures(tmp_path_factory):
    """The signatures of a SavedModel, loaded as the server loads them (keyword inputs)."""
    import tensorflow as tf

    module = tf.Module()
    module.batched = tf.function(lambda ids: {"doubled": ids * 2},
                                 input_signature=[tf.TensorSpec([None], tf.int32, name="ids")])
    module.generate = tf.function(lambda prefix, count: {"names": tf.fill([count], prefix)},
                                  input_signature=[tf.TensorSpec([], tf.string, name="prefix"),
                                                   tf.TensorSpec([], tf.int32, name="count")])
    module.ragged_inside = tf.function(lambda x: {"total": tf.reduce_sum(x, axis=1)},
                                       input_signature=[tf.TensorSpec([None, None], tf.float32, name="x")])
    module.fixed_inside = tf.function(lambda x: {"total": tf.reduce_sum(x, axis=1)},
                                      input_signature=[tf.TensorSpec([None, 3], tf.float32, name="x")])
    module.bfloat16 = tf.function(lambda x: {"doubled": x * 2},
                                  input_signature=[tf.TensorSpec([None], tf.bfloat16, name="x")])
    path = tmp_path_factory.mktemp("signatures") / "1"
    names = ("batched", "generate", "ragged_inside", "fixed_inside", "bfloat16")
    tf.saved_model.save(module, str(path), signatures={name: getattr(module, name) for name in names})
    loaded = tf.saved_model.load(str(path))
    return {name: saved_model_signature(name, loaded.signatures[name]) for name in names}


@pytest.mark.parametrize("value", [2**32 + 5, -(2**31) - 1, 2**70])
def test_an_integer_outside_its_dtype_is_a_400_naming_the_input_and_range(signatures, value):
    with pytest.raises(rest.BadRequest, match=rf"input 'ids' holds {value}, outside int32's range"):
        rest.request_inputs({"instances": [1, value]}, signatures["batched"])
    arrays, _ = rest.request_inputs({"instances": [1, 2**31 - 1]}, signatures["batched"])
    assert arrays["ids"].tolist() == [1, 2**31 - 1]


def test_bfloat16_inputs_take_numbers_and_keep_tf_servings_dtype_name(signatures):
    """NumPy calls bfloat16 (ml_dtypes) a kind of its own: it is a float, as TensorFlow says."""
    from kpipe.serving.app import _tensor_info

    arrays, _ = rest.request_inputs({"instances": [1.5, 2]}, signatures["bfloat16"])
    assert signatures["bfloat16"](arrays)["doubled"].astype(float).tolist() == [3.0, 4.0]
    with pytest.raises(rest.BadRequest, match="holds NaN or infinity"):
        rest.request_inputs({"instances": [float("inf")]}, signatures["bfloat16"])
    assert _tensor_info(signatures["bfloat16"].inputs["x"], "serve")["dtype"] == "DT_BFLOAT16"


def test_deeply_nested_json_is_a_400_not_a_recursion_error():
    for depth in (rest.MAX_DEPTH + 1, 100_000):  # 100,000: beyond what json.loads can recurse into
        body = ('{"instances": ' + "[" * depth + "1" + "]" * depth + "}").encode()
        with pytest.raises(rest.BadRequest, match="nested more than"):
            rest.parse_body(body)
    assert rest.parse_body(b'{"instances": [[[1]]]}') == {"instances": [[[1]]]}


def test_rows_and_counts_over_the_limit_are_too_large(signatures):
    for request in ({"instances": list(range(9))}, {"inputs": list(range(9))}, {"inputs": {"ids": list(range(9))}}):
        with pytest.raises(rest.TooLarge, match="asks for 9 rows"):  # refused before any conversion
            rest.check_listed_rows(request, signatures["batched"], 8)
        rest.check_listed_rows(request, signatures["batched"], 9)
    arrays, _ = rest.request_inputs({"instances": list(range(9))}, signatures["batched"])
    with pytest.raises(rest.TooLarge, match="asks for 9 rows .* at most 8 per request"):
        rest.check_rows(arrays, signatures["batched"], 8)
    rest.check_rows(arrays, signatures["batched"], 9)
    arrays, _ = rest.request_inputs({"inputs": {"prefix": "a", "count": 2_000_000_000}}, signatures["generate"])
    with pytest.raises(rest.TooLarge, match="asks for 2000000000 count"):
        rest.check_rows(arrays, signatures["generate"], 1024)
    arrays, _ = rest.request_inputs({"inputs": {"prefix": "a", "count": 3}}, signatures["generate"])
    rest.check_rows(arrays, signatures["generate"], 1024)


def test_a_signature_with_a_variable_inner_input_length_is_never_gathered(signatures):
    assert not signatures["ragged_inside"].gatherable  # requests of lengths 3 and 5 cannot share a call
    assert signatures["fixed_inside"].gatherable and signatures["batched"].gatherable
    assert not signatures["generate"].gatherable


def test_a_text_over_the_limit_is_too_large_naming_the_input():
    import numpy as np

    texts = {"text": np.array([b"short", b"x" * 2000], dtype=object)}
    with pytest.raises(rest.TooLarge, match="input 'text' holds a text of 2000 bytes; .* at most 1024 bytes"):
        rest.check_text_sizes(texts, 1024)
    rest.check_text_sizes(texts, 2000)
    rest.check_text_sizes({"x": np.zeros((2, 3))}, 1)  # numbers are not texts


def test_a_5000_digit_integer_is_a_bad_request_not_a_server_error():
    """Reliability review round 5, finding 14: CPython refuses to read it with a plain ValueError (not JSON's own),
    which used to reach the server's catch-all: a 500 and a logged traceback."""
    with pytest.raises(rest.BadRequest, match="a number Python will not read"):
        rest.parse_body(b'{"instances": [' + b"1" * 5000 + b"]}")


def test_a_client_that_disconnects_mid_body_is_dropped_without_a_traceback():
    """Finding 14's second half: starlette's ClientDisconnect from the body stream becomes an HTTPException (answered
    quietly), not an exception for the catch-all to log."""
    import asyncio
    import types

    from starlette.exceptions import HTTPException
    from starlette.requests import ClientDisconnect

    from kpipe.serving import app

    async def stream():
        yield b'{"instances": ['
        raise ClientDisconnect()

    server = app.ModelServer(types.SimpleNamespace(models={}), app.ServeOptions(batching=False))
    request = types.SimpleNamespace(headers={}, stream=stream)
    with pytest.raises(HTTPException) as caught:
        asyncio.run(server.read_body(request))
    assert caught.value.status_code == 499


def test_bodies_past_the_servers_budget_get_a_503_with_retry_after_until_room_is_made():
    """Reliability review round 5, finding 5: bodies were bounded one request at a time only (511 parallel 16 MiB
    bodies held 8 GiB). A budget across requests: the declared length is asked for before the body is read, and
    bytes beyond a declaration (or without one) as they arrive; a share is given back when its request ends."""
    import asyncio
    import types

    from starlette.exceptions import HTTPException

    from kpipe.serving import app

    server = app.ModelServer(types.SimpleNamespace(models={}),
                             app.ServeOptions(batching=False, max_request_bytes=100, max_bodies_bytes=250))

    def request(body: bytes, declared: bool = True):
        async def stream():
            for start in range(0, len(body), 40):
                yield body[start:start + 40]
        return types.SimpleNamespace(headers={"content-length": str(len(body))} if declared else {}, stream=stream)

    async def scenario():
        with server.bodies.share() as first, server.bodies.share() as second:
            assert len(await server.read_body(request(b"a" * 100), first)) == 100
            assert len(await server.read_body(request(b"b" * 100, declared=False), second)) == 100
            assert server.bodies.held == 200
            with server.bodies.share() as third, pytest.raises(HTTPException) as refused:
                await server.read_body(request(b"c" * 60), third)  # 260 > 250: refused before it is read
        assert refused.value.status_code == 503 and refused.value.headers == {"Retry-After": "1"}
        assert server.bodies.held == 0  # every share given back
        with server.bodies.share() as fourth:
            assert len(await server.read_body(request(b"c" * 60), fourth)) == 60

    asyncio.run(scenario())
