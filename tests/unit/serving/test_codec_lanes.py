"""Large request bodies are decoded in a thread of their own: however many are in flight, a small request's
body is decoded (and answered) at once."""

import asyncio
import json
import threading
import types

import numpy as np

from kpipe.serving import app, rest
from kpipe.serving.signatures import STRING, Signature, TensorInfo


def lengths(inputs):
    return {"length": np.array([len(t) for t in inputs["text"]])}


def length_server(call=lengths, **options) -> app.ModelServer:
    """A server of one model "m" whose signature `call`s with texts and answers their lengths."""
    signature = Signature("serving_default", call, {"text": TensorInfo("text", STRING, (None,))},
                          {"length": TensorInfo("length", np.dtype(np.int64), (None,))})
    model = types.SimpleNamespace(name="m", current=types.SimpleNamespace(version=1, signatures={
        "serving_default": signature}))
    repository = types.SimpleNamespace(models={"m": model}, get=lambda name: model if name == "m" else None)
    return app.ModelServer(repository, app.ServeOptions(**options))



def test_a_small_request_is_answered_while_large_bodies_are_still_being_decoded(monkeypatch):
    server = length_server(batching=False)
    release, parse = threading.Event(), rest.parse_body

    def slow_for_large_bodies(body):
        if len(body) > app.BULK_BODY_BYTES:
            release.wait(10)  # a large body's decoding, held until the test lets it go
        return parse(body)

    monkeypatch.setattr(rest, "parse_body", slow_for_large_bodies)
    large = json.dumps({"instances": ["x" * 1000] * 300}).encode()
    small = json.dumps({"instances": ["hello"]}).encode()

    async def scenario():
        held = [asyncio.ensure_future(server.predict("m", None, large)) for _ in range(3)]
        await asyncio.sleep(0.2)
        answer = await asyncio.wait_for(server.predict("m", None, small), timeout=5)
        release.set()
        await asyncio.gather(*held)
        return answer

    try:
        answer = asyncio.run(scenario())
    finally:
        release.set()
        for pool in (server.executor, server.codec, server.bulk_codec, server.loader):
            pool.shutdown(wait=False)
    assert json.loads(answer.body) == {"predictions": [5]}


def test_bulk_work_yields_twice_its_time_only_while_small_requests_are_in_flight():
    repository = types.SimpleNamespace(models={}, get=lambda name: None)
    server = app.ModelServer(repository, app.ServeOptions())

    async def pause_seconds(in_flight):
        server.small_in_flight = in_flight
        loop = asyncio.get_running_loop()
        started = loop.time()
        await server.yield_to_small(0.1)
        return loop.time() - started

    try:
        alone, shared = asyncio.run(pause_seconds(0)), asyncio.run(pause_seconds(1))
    finally:
        for pool in (server.executor, server.codec, server.bulk_codec, server.loader):
            pool.shutdown(wait=False)
    assert alone < 0.05 and shared >= app.BULK_PAUSE * 0.1 - 0.01


def test_the_batcher_runs_bulk_calls_in_the_servers_bulk_turn_and_never_small_ones():
    from concurrent.futures import ThreadPoolExecutor

    from kpipe.serving.batching import MicroBatcher

    import contextlib

    turns = []

    @contextlib.asynccontextmanager
    async def bulk_turn():
        turns.append("taken")
        yield
        turns.append("given back")

    async def scenario():
        with ThreadPoolExecutor(4) as executor:
            batcher = MicroBatcher(lambda inputs: {"y": inputs["x"] * 2}, max_batch_size=8, timeout=0.001,
                                   executor=executor, bulk_turn=bulk_turn)
            small = await batcher({"x": np.arange(1)})
            assert not turns
            bulk = await batcher({"x": np.arange(20)})  # 20 rows, cut into 3 bulk calls of at most 8
            await batcher.close()
        return small, bulk

    small, bulk = asyncio.run(scenario())
    np.testing.assert_array_equal(bulk["y"], np.arange(20) * 2)
    assert turns == ["taken", "given back"] * 3


def test_a_request_counts_as_bulk_as_the_batchers_lanes_count_it():
    server = app.ModelServer(types.SimpleNamespace(models={}, get=lambda name: None),
                             app.ServeOptions(max_batch_size=64, max_batch_bytes=1000))
    try:
        assert not server.bulk_rows({"text": np.array([b"short"] * 16, dtype=object)})
        assert server.bulk_rows({"text": np.array([b"short"] * 17, dtype=object)})  # over a quarter of the rows
        assert server.bulk_rows({"text": np.array([b"x" * 251], dtype=object)})  # over a quarter of the text
        assert not server.bulk_rows({"count": np.array(5), "prefix": np.array(b"Ma", dtype=object)})  # scalars
    finally:
        for pool in (server.executor, server.codec, server.bulk_codec, server.loader):
            pool.shutdown(wait=False)


def test_the_strings_a_body_lists_are_counted_without_parsing_it_whatever_separates_them():
    texts = ["plain", 'she said "no", then "yes"', '","', '", "', "", "a,b", "\\", "ünï"]
    for separators in ((", ", ": "), (",", ":")):
        body = json.dumps({"instances": texts * 50}, separators=separators).encode()
        assert len(texts) * 50 * 0.9 <= rest.listed_strings(body) <= len(texts) * 50 + 1  # + the key
    for joint in (b",\n", b",\n\t  ", b"\r\n,"):  # what a hand-made body may put between strings (finding 13)
        body = b'{"instances": [' + joint.join(b'"x"' for _ in range(50_000)) + b"]}"
        assert rest.listed_strings(body) == 50_001
    assert rest.listed_strings(json.dumps({"instances": [[1.0, 2.0]] * 50}).encode()) <= 1  # numbers: a key at most


def test_a_body_of_many_short_rows_is_decoded_in_the_bulk_lane_however_small(monkeypatch):
    """50,000 empty strings are 200 KB: refusing them (413) still costs their parse (4.5 ms), which must be paced
    as bulk work, not compete with small requests as one of them."""
    repository = types.SimpleNamespace(models={"m": types.SimpleNamespace(name="m", current=types.SimpleNamespace(
        version=1, signatures={}))}, get=lambda name: repository.models.get(name))
    server = app.ModelServer(repository, app.ServeOptions(max_batch_size=256))
    decoded_in = []

    def recorded(name, current, body):
        decoded_in.append(threading.current_thread().name)
        raise rest.TooLarge("too many rows")

    monkeypatch.setattr(server, "decode", recorded)
    try:
        for body in (json.dumps({"instances": [""] * 50_000}).encode(), json.dumps({"instances": ["hi"]}).encode()):
            try:
                asyncio.run(server.predict("m", None, body))
            except rest.TooLarge:
                pass
    finally:
        for pool in (server.executor, server.codec, server.bulk_codec, server.loader):
            pool.shutdown(wait=False)
    assert len(decoded_in) == 2 and decoded_in[0].startswith("kpipe-json-bulk")
    assert not decoded_in[1].startswith("kpipe-json-bulk")


def test_bulk_requests_that_no_batcher_gathers_run_one_at_a_time_and_small_ones_pass_them(monkeypatch):
    """--no-batching (and signatures the batchers cannot gather: translate, generate) must not let bulk requests
    hold every model thread (reliability finding 11): they take turns, and a small request is answered meanwhile."""
    running, most, release = [0], [0], threading.Event()
    lock = threading.Lock()

    def call(inputs):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        if len(inputs["text"]) > 1:
            release.wait(5)
        with lock:
            running[0] -= 1
        return lengths(inputs)

    server = length_server(call, batching=False, max_batch_size=64, threads=4)
    bulk = json.dumps({"instances": ["x"] * 200}).encode()
    small = json.dumps({"instances": ["hello"]}).encode()

    async def scenario():
        held = [asyncio.ensure_future(server.predict("m", None, bulk)) for _ in range(4)]
        await asyncio.sleep(0.3)
        answer = await asyncio.wait_for(server.predict("m", None, small), timeout=5)
        release.set()
        await asyncio.gather(*held)
        return answer

    try:
        assert json.loads(asyncio.run(scenario()).body)["predictions"] == [5]
    finally:
        for pool in (server.executor, server.codec, server.bulk_codec, server.loader):
            pool.shutdown(wait=False)
    assert most[0] == 2  # one bulk call and the small request, never two bulk calls at once


def test_a_large_bodys_decoding_and_a_bulk_call_never_overlap(monkeypatch):
    """Both are bulk work: they take the server's one bulk turn (each paced on its own, they overlapped and
    together took two thirds of the time)."""
    server = length_server(batching=False, max_batch_size=64)  # no batcher: the bulk call is the server's own
    busy, overlaps, decode = [0], [], app.ModelServer.decode

    def counting(work):
        def run(*args):
            busy[0] += 1
            overlaps.append(busy[0])
            try:
                threading.Event().wait(0.05)
                return work(*args)
            finally:
                busy[0] -= 1
        return run

    def decoding(name, current, body):  # a large body's decoding is bulk work, a small one's is not
        work = lambda *args: decode(server, *args)  # noqa: E731
        return (counting(work) if len(body) > app.BULK_BODY_BYTES else work)(name, current, body)

    monkeypatch.setattr(server, "decode", decoding)
    monkeypatch.setattr(server, "counted", lambda name, signature: counting(signature))
    large = json.dumps({"instances": ["x" * 100] * 3000}).encode()  # over 256 KiB (and 413: too many rows)
    bulk = json.dumps({"instances": ["x" * 100] * 64}).encode()  # many rows: a bulk call, a small body

    async def scenario():
        return await asyncio.gather(*(server.predict("m", None, body) for body in (bulk, large, bulk, large)),
                                    return_exceptions=True)

    try:
        asyncio.run(scenario())
    finally:
        for pool in (server.executor, server.codec, server.bulk_codec, server.loader):
            pool.shutdown(wait=False)
    assert len(overlaps) == 4 and max(overlaps) == 1, overlaps  # two decodings, two calls, one at a time
