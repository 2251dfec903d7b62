"""Micro-batching: concurrent requests to one signature gathered into one call.

The first request to arrive waits up to `timeout` seconds for others (or until `max_batch_size`
rows are waiting); then their rows are concatenated, the signature runs once in a worker thread,
and each request gets its own rows back. While a call runs, new requests queue up and form the
next batch, so under load batches grow on their own and one call serves many clients; up to
`concurrency` calls run at once, so one slow call (a request of huge texts) does not hold up the
small requests behind it. This is
TF Serving's `batch_timeout_micros` / `max_batch_size` policy. A batch whose call fails is run
again one request at a time, so only the bad request gets the error. A request larger than
`max_batch_size` is cut into chunks that queue one after another, so other clients' requests are
answered between them. No failure ends the worker task: every request in a batch that fails is
answered with the error (a dead worker would leave every later request waiting forever).
"""

from __future__ import annotations

import asyncio
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Callable

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


class MicroBatcher:
    """`await batcher(inputs)` answers like `run(inputs)` would, sharing calls with concurrent requests.

    Args:
        run: the call on a batch (arrays with rows on axis 0 in, the same out); runs in `executor`.
        max_batch_size: rows per call at most (a larger request is cut into chunks of this size).
        max_batch_bytes: bytes of text per call at most, likewise (a single longer row still runs, alone).
        timeout: seconds the first request of a batch waits for others.
        executor: where `run` runs (with at least `concurrency` threads).
        concurrency: calls to `run` at once at most; while all are busy, waiting requests form the next batch.
    """

    def __init__(self, run: Callable[[Arrays], Arrays], *, max_batch_size: int, timeout: float, executor: Executor,
                 concurrency: int = 1, max_batch_bytes: int = 0):
        self.run, self.max_batch_size, self.timeout, self.executor = run, max_batch_size, timeout, executor
        self.concurrency, self.max_batch_bytes = concurrency, max_batch_bytes or np.iinfo(np.int64).max
        self._queue: asyncio.Queue | None = None
        self._worker: asyncio.Task | None = None
        self._held: _Waiting | None = None  # a request that did not fit the last batch: it opens the next

    async def __call__(self, inputs: Arrays) -> Arrays:
        sizes = text_bytes(inputs)
        bounds = self._chunks(sizes)
        if len(bounds) == 1:
            return await self._one_call(inputs, len(sizes), int(sizes.sum()))
        answers = []  # one chunk at a time: requests that arrive meanwhile are served between the chunks
        for start, end in bounds:
            chunk = {name: value[start:end] for name, value in inputs.items()}
            answers.append(await self._one_call(chunk, end - start, int(sizes[start:end].sum())))
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

    async def _one_call(self, inputs: Arrays, rows: int, size: int = 0) -> Arrays:
        if self._queue is None:
            self._queue = asyncio.Queue()
            self._worker = asyncio.get_running_loop().create_task(self._serve_batches())
        future = asyncio.get_running_loop().create_future()
        await self._queue.put(_Waiting(inputs, rows, future, size))
        return await future

    async def close(self) -> None:
        """Answer every request already queued, then end the worker task (a retired version's batcher)."""
        if self._worker is None:
            return
        await self._queue.put(_STOP)
        await self._worker

    async def _serve_batches(self) -> None:
        slots, running, stop = asyncio.Semaphore(self.concurrency), set(), False
        while not stop:
            await slots.acquire()  # a free call slot first: meanwhile the queue fills the next batch
            batch, stop = await self._gather()
            call = asyncio.get_running_loop().create_task(self._answer_safely(batch))
            running.add(call)
            call.add_done_callback(lambda done: (running.discard(done), slots.release()))
        await asyncio.gather(*running)  # `close`: every call under way answered before the worker ends

    async def _answer_safely(self, batch: list[_Waiting]) -> None:
        try:
            await self._answer(batch)
        except asyncio.CancelledError:
            raise
        except BaseException as error:  # whatever went wrong, these requests get an answer and the worker lives
            for item in batch:
                _settle(item.future, error=error)

    async def _gather(self) -> tuple[list[_Waiting], bool]:
        """The next batch, and whether `close` asked to stop after it."""
        loop = asyncio.get_running_loop()
        first = self._held or await self._queue.get()
        if first is _STOP:
            return [], True
        batch = [first]
        self._held = None
        rows, size, deadline = batch[0].rows, batch[0].size, loop.time() + self.timeout
        while rows < self.max_batch_size and size < self.max_batch_bytes:
            if not self._queue.empty():
                item = self._queue.get_nowait()
            else:
                remaining = deadline - loop.time()
                if remaining <= 0:
                    break
                try:
                    item = await asyncio.wait_for(self._queue.get(), remaining)
                except asyncio.TimeoutError:
                    break
            if item is _STOP:
                return batch, True
            if rows + item.rows > self.max_batch_size or size + item.size > self.max_batch_bytes:
                self._held = item
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
