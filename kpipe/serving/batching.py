"""Micro-batching: concurrent requests to one signature gathered into one call.

The first request to arrive waits up to `timeout` seconds for others (or until `max_batch_size`
rows are waiting); then their rows are concatenated, the signature runs once in a worker thread,
and each request gets its own rows back. While a call runs, new requests queue up and form the
next batch, so under load batches grow on their own and one call serves many clients. This is
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


class MicroBatcher:
    """`await batcher(inputs)` answers like `run(inputs)` would, sharing calls with concurrent requests.

    Args:
        run: the call on a batch (arrays with rows on axis 0 in, the same out); runs in `executor`.
        max_batch_size: rows per call at most (a larger request is cut into chunks of this size).
        timeout: seconds the first request of a batch waits for others.
        executor: where `run` runs (one thread is enough: calls to one signature run one at a time).
    """

    def __init__(self, run: Callable[[Arrays], Arrays], *, max_batch_size: int, timeout: float, executor: Executor):
        self.run, self.max_batch_size, self.timeout, self.executor = run, max_batch_size, timeout, executor
        self._queue: asyncio.Queue | None = None
        self._worker: asyncio.Task | None = None
        self._held: _Waiting | None = None  # a request that did not fit the last batch: it opens the next

    async def __call__(self, inputs: Arrays) -> Arrays:
        rows = len(next(iter(inputs.values())))
        if rows <= self.max_batch_size:
            return await self._one_call(inputs, rows)
        answers = []  # one chunk at a time: requests that arrive meanwhile are served between the chunks
        for start in range(0, rows, self.max_batch_size):
            chunk = {name: value[start:start + self.max_batch_size] for name, value in inputs.items()}
            answers.append(await self._one_call(chunk, len(next(iter(chunk.values())))))
        return {name: np.concatenate([answer[name] for answer in answers]) for name in answers[0]}

    async def _one_call(self, inputs: Arrays, rows: int) -> Arrays:
        if self._queue is None:
            self._queue = asyncio.Queue()
            self._worker = asyncio.get_running_loop().create_task(self._serve_batches())
        future = asyncio.get_running_loop().create_future()
        await self._queue.put(_Waiting(inputs, rows, future))
        return await future

    async def close(self) -> None:
        """Answer every request already queued, then end the worker task (a retired version's batcher)."""
        if self._worker is None:
            return
        await self._queue.put(_STOP)
        await self._worker

    async def _serve_batches(self) -> None:
        stop = False
        while not stop:
            batch, stop = await self._gather()
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
        rows, deadline = batch[0].rows, loop.time() + self.timeout
        while rows < self.max_batch_size:
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
            if rows + item.rows > self.max_batch_size:
                self._held = item
                break
            batch.append(item)
            rows += item.rows
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
