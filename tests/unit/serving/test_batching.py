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
        return calls, [p.result()["y"].tolist() for p in pending], batcher.workers

    calls, answers, workers = asyncio.run(scenario())
    assert answers == [[0], [2], [4], [6], [8]] and sum(calls) == 5
    assert workers and all(worker.done() and not worker.cancelled() for worker in workers)


def test_closing_a_batcher_that_never_ran_does_nothing():
    asyncio.run(MicroBatcher(doubling([]), max_batch_size=2, timeout=0.0, executor=ThreadPoolExecutor(1)).close())


def test_the_server_closes_the_batcher_of_a_version_it_no_longer_serves():
    from types import SimpleNamespace

    from kpipe.serving.app import ModelServer

    repository = SimpleNamespace(models={"m": None})
    options = SimpleNamespace(threads=1, max_batch_size=4, batch_timeout=0.0, max_batch_bytes=1 << 20, bodies_budget=1 << 20)
    version = {v: SimpleNamespace(version=v, signatures={"serve": doubling([])}) for v in (1, 2)}

    async def scenario():
        server = ModelServer(repository, options)
        old = server.batcher("m", version[1], "serve")
        assert (await old({"x": np.array([1])}))["y"].tolist() == [2]
        new = server.batcher("m", version[2], "serve")
        assert list(server.batchers) == [("m", 2, "serve")] and new is not old
        await asyncio.wait_for(asyncio.gather(*server.closing), 5)
        return old.workers

    workers = asyncio.run(scenario())
    assert workers and all(worker.done() for worker in workers)


def test_requests_of_different_inner_lengths_fail_alone_and_never_wedge_the_batcher():
    """Two concurrent requests whose arrays cannot be concatenated (inner lengths 3 and 5) used to kill the worker
    task outside its error handling; every later request then waited forever."""
    def summing(inputs):
        return {"y": inputs["x"].sum(axis=1)}

    async def scenario():
        batcher = MicroBatcher(summing, max_batch_size=8, timeout=0.05, executor=ThreadPoolExecutor(1))
        first = await asyncio.wait_for(asyncio.gather(batcher({"x": np.ones((1, 3))}), batcher({"x": np.ones((1, 5))}),
                                                      return_exceptions=True), 5)
        later = await asyncio.wait_for(batcher({"x": np.ones((2, 4))}), 5)  # still answered
        await batcher.close()
        return first, later

    first, later = asyncio.run(scenario())
    assert [a["y"].tolist() for a in first] == [[3.0], [5.0]]  # retried one by one, each answered
    assert later["y"].tolist() == [4.0, 4.0]


def test_a_failure_the_retry_cannot_catch_answers_the_batch_and_the_worker_lives():
    def broken(inputs):
        raise MemoryError("out of memory")  # not an Exception subclass the retry handles

    async def scenario():
        batcher = MicroBatcher(broken, max_batch_size=8, timeout=0.01, executor=ThreadPoolExecutor(1))
        answers = await asyncio.wait_for(asyncio.gather(*(batcher({"x": np.ones(1)}) for _ in range(2)),
                                                        return_exceptions=True), 5)
        again = await asyncio.wait_for(asyncio.gather(batcher({"x": np.ones(1)}), return_exceptions=True), 5)
        alive = all(not worker.done() for worker in batcher.workers)
        await batcher.close()
        return answers, again, alive

    answers, again, alive = asyncio.run(scenario())
    assert all(isinstance(a, MemoryError) for a in [*answers, *again]) and alive


def test_a_request_over_the_batch_size_runs_in_chunks_that_interleave_with_other_clients():
    async def scenario():
        calls = []
        run = doubling(calls)
        batcher = MicroBatcher(run, max_batch_size=4, timeout=0.0, executor=ThreadPoolExecutor(1))
        big = asyncio.create_task(batcher({"x": np.arange(10)}))
        await asyncio.sleep(0)  # the big request's first chunk is queued
        small = asyncio.create_task(batcher({"x": np.array([100])}))
        answers = await asyncio.wait_for(asyncio.gather(big, small), 5)
        await batcher.close()
        return calls, answers

    calls, (big, small) = asyncio.run(scenario())
    assert big["y"].tolist() == [2 * i for i in range(10)] and small["y"].tolist() == [200]
    assert max(calls) <= 4 and sum(calls) == 11
    assert calls.index(1) < len(calls) - 1  # the small request was answered before the big one's last chunk


def test_a_slow_call_does_not_hold_up_the_small_requests_behind_it():
    async def scenario(concurrency):
        release, order = threading.Event(), []

        def run(inputs):
            if inputs["x"][0] == 0:  # the slow one (huge texts, say)
                release.wait(5)
            order.append(int(inputs["x"][0]))
            return {"y": inputs["x"]}

        batcher = MicroBatcher(run, max_batch_size=1, timeout=0.0, executor=ThreadPoolExecutor(2),
                               concurrency=concurrency)
        slow = asyncio.create_task(batcher({"x": np.array([0])}))
        await asyncio.sleep(0.05)
        small = asyncio.create_task(batcher({"x": np.array([1])}))
        done, _ = await asyncio.wait([small], timeout=0.5)
        release.set()
        await asyncio.gather(slow, small)
        await batcher.close()
        return bool(done), order

    assert asyncio.run(scenario(2)) == (True, [1, 0])   # answered while the slow call ran
    assert asyncio.run(scenario(1)) == (False, [0, 1])  # one call at a time: it waited


def test_a_request_with_more_text_than_a_call_takes_runs_as_several_calls():
    async def scenario():
        calls = []

        def run(inputs):
            calls.append([len(t) for t in inputs["t"]])
            return {"n": np.array([len(t) for t in inputs["t"]])}

        batcher = MicroBatcher(run, max_batch_size=100, timeout=0.0, executor=ThreadPoolExecutor(1),
                               max_batch_bytes=10)
        texts = np.array([b"aaaa", b"bbbb", b"cccc", b"d" * 25, b"e"], dtype=object)
        answer = await batcher({"t": texts})
        await batcher.close()
        return calls, answer

    calls, answer = asyncio.run(scenario())
    assert answer["n"].tolist() == [4, 4, 4, 25, 1]
    assert calls == [[4, 4], [4], [25], [1]]  # at most 10 bytes a call; a longer text alone



def test_bulk_requests_run_one_call_at_a_time_beside_the_small_requests():
    """Bulk work (requests cut into chunks) has a lane of its own: two bulk requests never hold two call slots, and
    a small request is answered while a bulk call is stuck, even with one slot for small requests."""
    async def scenario():
        release, lock, active, most = threading.Event(), threading.Lock(), [0], [0]

        def run(inputs):
            bulk = inputs["x"][0] >= 100
            if bulk:
                with lock:
                    active[0] += 1
                    most[0] = max(most[0], active[0])
                release.wait(5)
                with lock:
                    active[0] -= 1
            return {"y": inputs["x"] * 2}

        batcher = MicroBatcher(run, max_batch_size=4, timeout=0.0, executor=ThreadPoolExecutor(4), concurrency=1)
        bulks = [asyncio.create_task(batcher({"x": np.arange(100, 110) + 100 * i})) for i in range(2)]
        await asyncio.sleep(0.05)  # the first bulk chunk holds its call
        small = asyncio.create_task(batcher({"x": np.array([1])}))
        done, _ = await asyncio.wait([small], timeout=1)
        release.set()
        answers = await asyncio.wait_for(asyncio.gather(*bulks), 5)
        await batcher.close()
        return bool(done), small.result()["y"].tolist(), most[0], [a["y"].tolist() for a in answers]

    answered_early, small, most_bulk_calls, bulks = asyncio.run(scenario())
    assert answered_early and small == [2]
    assert most_bulk_calls == 1
    assert bulks == [[2 * x for x in range(100, 110)], [2 * x for x in range(200, 210)]]


def test_a_request_cut_in_chunks_is_answered_whole_when_its_batcher_closes_under_it():
    """Reliability review round 5, finding 2: the chunks after `close` used to wait forever in a queue no worker
    read."""
    async def scenario():
        calls, first_chunk_running, release = [], threading.Event(), threading.Event()
        run = doubling(calls)

        def slow(inputs):
            first_chunk_running.set()
            release.wait(5)
            return run(inputs)

        batcher = MicroBatcher(slow, max_batch_size=2, timeout=0.0, executor=ThreadPoolExecutor(2))
        request = asyncio.create_task(batcher({"x": np.arange(6)}))  # three chunks of two rows
        while not first_chunk_running.is_set():
            await asyncio.sleep(0.01)
        closing = asyncio.create_task(batcher.close())  # a version switch while chunk 1 runs
        await asyncio.sleep(0.05)
        release.set()
        answer = await asyncio.wait_for(request, 5)
        await asyncio.wait_for(closing, 5)
        return answer, calls

    answer, calls = asyncio.run(scenario())
    assert answer["y"].tolist() == [0, 2, 4, 6, 8, 10] and calls == [2, 2, 2]
