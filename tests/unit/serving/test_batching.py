"""The micro-batcher: concurrent requests share calls, each gets its own rows, and a closed batcher
answers what it holds before its worker task ends."""

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from kpipe.serving.batching import MicroBatcher


def doubling(calls):
    def run(inputs):
        calls.append(len(inputs["x"]))
        return {"y": inputs["x"] * 2}
    return run


def test_concurrent_requests_share_a_call_and_each_gets_its_rows():
    async def scenario():
        calls = []
        batcher = MicroBatcher(doubling(calls), max_batch_size=8, timeout=0.05, executor=ThreadPoolExecutor(1))
        answers = await asyncio.gather(*(batcher({"x": np.array([i, i])}) for i in range(3)))
        await batcher.close()
        return calls, answers

    calls, answers = asyncio.run(scenario())
    assert calls == [6]
    assert [a["y"].tolist() for a in answers] == [[0, 0], [2, 2], [4, 4]]


def test_close_answers_the_queued_requests_then_ends_the_worker():
    async def scenario():
        calls, release = [], threading.Event()
        run = doubling(calls)

        def slow(inputs):  # the first call holds the worker while more requests queue behind it
            release.wait(5)
            return run(inputs)

        batcher = MicroBatcher(slow, max_batch_size=2, timeout=0.0, executor=ThreadPoolExecutor(1))
        pending = [asyncio.create_task(batcher({"x": np.array([i])})) for i in range(5)]
        await asyncio.sleep(0.05)
        closing = asyncio.create_task(batcher.close())
        await asyncio.sleep(0.05)
        assert not closing.done()  # drains first
        release.set()
        await asyncio.wait_for(closing, 5)
        return calls, [p.result()["y"].tolist() for p in pending], batcher._worker

    calls, answers, worker = asyncio.run(scenario())
    assert answers == [[0], [2], [4], [6], [8]] and sum(calls) == 5
    assert worker.done() and not worker.cancelled()


def test_closing_a_batcher_that_never_ran_does_nothing():
    asyncio.run(MicroBatcher(doubling([]), max_batch_size=2, timeout=0.0, executor=ThreadPoolExecutor(1)).close())


def test_the_server_closes_the_batcher_of_a_version_it_no_longer_serves():
    from types import SimpleNamespace

    from kpipe.serving.app import ModelServer

    repository = SimpleNamespace(models={"m": None})
    options = SimpleNamespace(threads=1, max_batch_size=4, batch_timeout=0.0)
    version = {v: SimpleNamespace(version=v, signatures={"serve": doubling([])}) for v in (1, 2)}

    async def scenario():
        server = ModelServer(repository, options)
        old = server.batcher("m", version[1], "serve")
        assert (await old({"x": np.array([1])}))["y"].tolist() == [2]
        new = server.batcher("m", version[2], "serve")
        assert list(server.batchers) == [("m", 2, "serve")] and new is not old
        await asyncio.wait_for(asyncio.gather(*server.closing), 5)
        return old._worker

    assert asyncio.run(scenario()).done()
