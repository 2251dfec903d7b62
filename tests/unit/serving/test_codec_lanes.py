"""Large request bodies are decoded in a thread of their own: however many are in flight, a small request's
body is decoded (and answered) at once."""

import asyncio
import json
import threading
import types

import numpy as np

from kpipe.serving import app, rest
from kpipe.serving.signatures import STRING, Signature, TensorInfo


def test_a_small_request_is_answered_while_large_bodies_are_still_being_decoded(monkeypatch):
    signature = Signature("serving_default", lambda inputs: {"length": np.array([len(t) for t in inputs["text"]])},
                          {"text": TensorInfo("text", STRING, (None,))},
                          {"length": TensorInfo("length", np.dtype(np.int64), (None,))})
    model = types.SimpleNamespace(name="m", current=types.SimpleNamespace(version=1, signatures={
        "serving_default": signature}))
    repository = types.SimpleNamespace(models={"m": model}, get=lambda name: model if name == "m" else None)
    server = app.ModelServer(repository, app.ServeOptions(batching=False))
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
