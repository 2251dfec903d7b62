"""The progress line of long epochs when the output is not a terminal: at least every 30 s, with steps, rows/s and
the time left (a fake clock: 10 s per step)."""

import io

from kpipe.training.progress import ProgressLines


def run_epoch(steps, params):
    now = [0.0]
    out = io.StringIO()
    progress = ProgressLines(rows_per_step=64, every_s=30, stream=out, clock=lambda: now[0])
    progress.set_params(params)
    progress.on_epoch_begin(0)
    for batch in range(steps):
        now[0] += 10.0
        progress.on_train_batch_end(batch)
    return out.getvalue().splitlines()


def test_a_line_every_30_seconds_with_steps_rows_per_second_and_time_left():
    lines = run_epoch(10, {"epochs": 2, "steps": 10})
    assert lines == ["epoch 1/2: step 3/10, 6 rows/s, about 1 min 10 s left in the epoch",
                     "epoch 1/2: step 6/10, 6 rows/s, about 0 min 40 s left in the epoch",
                     "epoch 1/2: step 9/10, 6 rows/s, about 0 min 10 s left in the epoch"]


def test_an_epoch_of_unknown_length_still_reports_steps_and_speed():
    assert run_epoch(4, {"epochs": 1, "steps": None}) == ["epoch 1/1: step 3/?, 6 rows/s"]
