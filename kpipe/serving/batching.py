"""Micro-batching: concurrent requests to one signature gathered into one call.

The first request to arrive waits up to `timeout` seconds for others (or until `max_batch_size`
rows are waiting); then their rows are concatenated, the signature runs once in a worker thread,
and each request gets its own rows back. While a call runs, new requests queue up and form the
next batch, so under load batches grow on their own and one call serves many clients; up to
`concurrency` calls run at once, so one slow call (a request of huge texts) does not hold up the
small requests behind it. This is
TF Serving's `batch_timeout_micros` / `max_batch_size` policy. A batch whose call fails is run
again one request at a time, so only the bad request gets the error. A request larger than
`max_batch_size` is cut into chunks that queue one after another in a lane of bulk work apart from
the small requests, so other clients' requests are answered between and beside them. No failure ends
a worker task: every request in a batch that fails is answered with the error (a dead worker would
leave every later request waiting forever).
"""

from __future__ import annotations

import asyncio
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import AsyncContextManager, Callable

import numpy as np

Arrays = dict[str, np.ndarray]
_STOP = object()  # queued by `close`: everything before it is answered, then the worker ends


@dataclass
class _Waiting:
    inputs: Arrays
    rows: int
    future: asyncio.Future
    size: int = 0  # bytes of text


def text_bytes(inputs: Arrays) -> np.ndarray:
    """Bytes of text in each row of `inputs` (string inputs; 0 for numbers): what a text model's work grows with."""
    rows = len(next(iter(inputs.values())))
    sizes = np.zeros(rows, dtype=np.int64)
    for value in inputs.values():
        if value.dtype == object:
            sizes += np.fromiter((sum(map(len, np.ravel(row))) if isinstance(row, np.ndarray) else len(row)
                                  for row in value), dtype=np.int64, count=rows)
    return sizes


def is_bulk(rows: int, size: int, max_batch_size: int, max_batch_bytes: int = 0) -> bool:
    """Whether a request of `rows` rows and `size` bytes of text is bulk work: more than one row filling a quarter
    of a call's rows, or a quarter of a call's text (`max_batch_bytes` 0: no limit on text)."""
    return (rows > 1 and 4 * rows > max_batch_size) or 4 * size > (max_batch_bytes or np.iinfo(np.int64).max)


class _Lane:
    """A queue of waiting requests and the worker task that turns it into calls, `concurrency` at a time."""

    def __init__(self, concurrency: int):
        self.concurrency = concurrency
        self.queue: asyncio.Queue = asyncio.Queue()
        self.worker: asyncio.Task | None = None
        self.held: _Waiting | None = None  # a request that did not fit the last batch: it opens the next


class MicroBatcher:
    """`await batcher(inputs)` answers like `run(inputs)` would, sharing calls with concurrent requests.

    Requests go through one of two lanes. Small ones (one row or under a quarter of a call's rows, and under a
    quarter of its text) are batched together, up to `concurrency` calls at once. Bulk ones (the chunks of a
    request cut into several calls, or one that alone fills a quarter of a call) run one call at a time in a lane
    of their own: however many bulk requests arrive, they hold one call slot and one share of the cores, and
    small requests never queue behind them (measured in benchmarks/serve_abuse.py).

    Args:
        run: the call on a batch (arrays with rows on axis 0 in, the same out); runs in `executor`.
        max_batch_size: rows per call at most (a larger request is cut into chunks of this size).
        max_batch_bytes: bytes of text per call at most, likewise (a single longer row still runs, alone).
        timeout: seconds the first request of a batch waits for others.
        executor: where `run` runs (with at least `concurrency` + 1 threads).
        concurrency: calls of small requests to `run` at once at most; while all are busy, waiting requests form
            the next batch. Bulk requests add one call at most.
    """

    def __init__(self, run: Callable[[Arrays], Arrays], *, max_batch_size: int, timeout: float, executor: Executor,
                 concurrency: int = 1, max_batch_bytes: int = 0,
                 bulk_turn: Callable[[], AsyncContextManager] | None = None):
        self.run, self.max_batch_size, self.timeout, self.executor = run, max_batch_size, timeout, executor
        # each bulk call runs inside `bulk_turn()`: the server's one turn for bulk work, paced (kpipe/serving/app.py)
        self.bulk_turn = bulk_turn
        self.concurrency, self.max_batch_bytes = concurrency, max_batch_bytes or np.iinfo(np.int64).max
        self._lanes: dict[str, _Lane] | None = None  # made on first use, inside the event loop
        self._closed = False

    async def __call__(self, inputs: Arrays) -> Arrays:
        sizes = text_bytes(inputs)
        bounds = self._chunks(sizes)
        if len(bounds) == 1:
            rows, size = len(sizes), int(sizes.sum())
            bulk = is_bulk(rows, size, self.max_batch_size, self.max_batch_bytes)
            return await self._one_call(inputs, rows, size, "bulk" if bulk else "small")
        answers = []  # one chunk at a time: requests that arrive meanwhile are served between the chunks
        for start, end in bounds:
            chunk = {name: value[start:end] for name, value in inputs.items()}
            answers.append(await self._one_call(chunk, end - start, int(sizes[start:end].sum()), "bulk"))
        return {name: np.concatenate([answer[name] for answer in answers]) for name in answers[0]}

    def _chunks(self, sizes: np.ndarray) -> list[tuple[int, int]]:
        """(start, end) of consecutive row ranges within max_batch_size rows and max_batch_bytes bytes each."""
        bounds, start, total = [], 0, 0
        for i, size in enumerate(sizes):
            if i > start and (i - start >= self.max_batch_size or total + size > self.max_batch_bytes):
                bounds.append((start, i))
                start, total = i, 0
            total += size
        bounds.append((start, len(sizes)))
        return bounds

    async def _one_call(self, inputs: Arrays, rows: int, size: int, lane_name: str) -> Arrays:
        if self._closed:  # the next chunk of a request cut in chunks, after `close`: answered alone, never queued
            return await asyncio.get_running_loop().run_in_executor(self.executor, self.run, inputs)
        if self._lanes is None:
            self._lanes = {"small": _Lane(self.concurrency), "bulk": _Lane(1)}
        lane = self._lanes[lane_name]
        if lane.worker is None:
            lane.worker = asyncio.get_running_loop().create_task(self._serve_batches(lane))
        future = asyncio.get_running_loop().create_future()
        await lane.queue.put(_Waiting(inputs, rows, future, size))
        return await future

    @property
    def workers(self) -> list[asyncio.Task]:
        """The worker tasks started so far (one per lane used)."""
        return [lane.worker for lane in (self._lanes or {}).values() if lane.worker is not None]

    async def close(self) -> None:
        """Answer every request already queued, then end the worker tasks (a retired version's batcher). The later
        chunks of a request under way are answered too, each in a call of its own: nothing waits forever."""
        self._closed = True  # before _STOP is queued: nothing can be queued behind it
        for lane in (self._lanes or {}).values():
            if lane.worker is not None:
                await lane.queue.put(_STOP)
                await lane.worker

    async def _serve_batches(self, lane: _Lane) -> None:
        slots, running, stop = asyncio.Semaphore(lane.concurrency), set(), False
        while not stop:
            await slots.acquire()  # a free call slot first: meanwhile the queue fills the next batch
            batch, stop = await self._gather(lane)
            paced = lane is self._lanes["bulk"] and self.bulk_turn is not None
            call = asyncio.get_running_loop().create_task(self._answer_paced(batch) if paced
                                                          else self._answer_safely(batch))
            running.add(call)
            call.add_done_callback(lambda done: (running.discard(done), slots.release()))
        await asyncio.gather(*running)  # `close`: every call under way answered before the worker ends

    async def _answer_paced(self, batch: list[_Waiting]) -> None:
        """A bulk call in the server's bulk turn (which paces it), while the lane's slot stays taken."""
        if not batch:  # `close`'s last, empty round
            return
        async with self.bulk_turn():
            await self._answer_safely(batch)

    async def _answer_safely(self, batch: list[_Waiting]) -> None:
        try:
            await self._answer(batch)
        except asyncio.CancelledError:
            raise
        except BaseException as error:  # whatever went wrong, these requests get an answer and the worker lives
            for item in batch:
                _settle(item.future, error=error)

    async def _gather(self, lane: _Lane) -> tuple[list[_Waiting], bool]:
        """The lane's next batch, and whether `close` asked to stop after it."""
        loop = asyncio.get_running_loop()
        first = lane.held or await lane.queue.get()
        if first is _STOP:
            return [], True
        batch = [first]
        lane.held = None
        rows, size, deadline = batch[0].rows, batch[0].size, loop.time() + self.timeout
        while rows < self.max_batch_size and size < self.max_batch_bytes:
            if not lane.queue.empty():
                item = lane.queue.get_nowait()
            else:
                remaining = deadline - loop.time()
                if remaining <= 0:
                    break
                try:
                    item = await asyncio.wait_for(lane.queue.get(), remaining)
                except asyncio.TimeoutError:
                    break
            if item is _STOP:
                return batch, True
            if rows + item.rows > self.max_batch_size or size + item.size > self.max_batch_bytes:
                lane.held = item
                break
            batch.append(item)
            rows, size = rows + item.rows, size + item.size
        return batch, False

    async def _answer(self, batch: list[_Waiting]) -> None:
        loop = asyncio.get_running_loop()
        batch = [item for item in batch if not item.future.cancelled()]  # clients that went away
        if not batch:
            return
        try:
            merged = (batch[0].inputs if len(batch) == 1 else
                      {name: np.concatenate([item.inputs[name] for item in batch]) for name in batch[0].inputs})
            outputs = await loop.run_in_executor(self.executor, self.run, merged)
        except Exception as error:
            if len(batch) == 1:
                _settle(batch[0].future, error=error)
                return
            for item in batch:  # find the request that failed: each alone
                try:
                    _settle(item.future, await loop.run_in_executor(self.executor, self.run, item.inputs))
                except Exception as single_error:
                    _settle(item.future, error=single_error)
            return
        start = 0
        for item in batch:
            _settle(item.future, {name: value[start:start + item.rows] for name, value in outputs.items()})
            start += item.rows


def _settle(future: asyncio.Future, result=None, *, error: BaseException | None = None) -> None:
    if future.done():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)
