"""Streamed shards under two real workers (TF_CONFIG on 127.0.0.1): every training row is trained on once per
epoch across the workers, none twice, with more shards than workers (uneven: 2 and 1) and with one shard."""

import json
import sys
from pathlib import Path

import pandas as pd
import pytest

from kpipe.datasets.shard_scan import split_codes
from tests.clusters import finish, start_workers

pytestmark = pytest.mark.slow  # real worker processes

WORKER = Path(__file__).with_name("stream_worker.py")
LAYOUTS = (3, 1)  # shards: more than workers (uneven: 2 and 1), and one


def test_two_workers_train_on_every_streamed_training_row_once_per_epoch(tmp_path):
    rows = pd.DataFrame({"id": [f"r{i}" for i in range(300)], "text": [f"{i} good film" for i in range(300)],
                         "label": [i % 2 for i in range(300)]})
    command = [sys.executable, str(WORKER)]
    for parts in LAYOUTS:  # both layouts trained by one cluster, one after the other
        folder = tmp_path / f"{parts}-shards"
        (folder / "shards").mkdir(parents=True)
        for number, start in enumerate(range(0, 300, 300 // parts)):
            rows.iloc[start:start + 300 // parts].to_parquet(folder / "shards" / f"part-{number}.parquet")
        command += [str(folder / "shards" / "*"), str(folder / "cache"), str(folder)]
    results = finish(start_workers(command, tmp_path))
    assert all(rc == 0 for rc, _, _ in results), "\n".join(err[-2000:] for _, _, err in results)
    training = {i for i, code in enumerate(split_codes(rows.id.to_numpy(), seed=1337, validation_fraction=0.1,
                                                        test_fraction=0.1)) if code == 0}
    for parts in LAYOUTS:
        seen = [json.loads((tmp_path / f"{parts}-shards" / f"seen-{index}.json").read_text()) for index in range(2)]
        for epoch in range(2):
            ids = [row for worker in seen for e, row in worker if e == epoch]
            assert sorted(ids) == sorted(training), f"{parts} shards, epoch {epoch}"
        assert all(worker for worker in seen), f"{parts} shards"  # both workers trained
