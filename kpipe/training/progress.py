"""A progress line at least every 30 seconds of a long epoch when the output is not a terminal (a log file,
CI, `nohup`): Keras prints one line per epoch there, so a 60-minute fine-tuning epoch would print nothing."""

from __future__ import annotations

import sys
import time
from typing import Callable, TextIO

import keras


class ProgressLines(keras.callbacks.Callback):
    """Prints "epoch E/N: step S/T, R rows/s, about M min S s left in the epoch" every `every_s` seconds.

    Args:
        rows_per_step: the global batch (rows/s counts full batches; the last one may be smaller).
        every_s: seconds between lines at most (a line is printed at the first step after them).
        stream, clock: where lines go and what tells the time (for tests).
    """

    def __init__(self, rows_per_step: int, every_s: float = 30.0, stream: TextIO | None = None,
                 clock: Callable[[], float] = time.monotonic):
        super().__init__()
        self.rows_per_step, self.every_s, self.clock = rows_per_step, every_s, clock
        self.stream = stream
        self._epoch, self._started, self._last = 0, 0.0, 0.0

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch, self._started = epoch, self.clock()
        self._last = self._started

    def on_train_batch_end(self, batch, logs=None):
        now = self.clock()
        if now - self._last < self.every_s:
            return
        self._last = now
        done, elapsed = batch + 1, max(now - self._started, 1e-9)
        steps = (self.params or {}).get("steps")
        epochs = (self.params or {}).get("epochs", "?")
        line = (f"epoch {self._epoch + 1}/{epochs}: step {done}/{steps or '?'}, "
                f"{done * self.rows_per_step / elapsed:,.0f} rows/s")
        if steps:
            left = elapsed / done * max(steps - done, 0)
            line += f", about {int(left // 60)} min {int(left % 60)} s left in the epoch"
        print(line, file=self.stream or sys.stdout, flush=True)
