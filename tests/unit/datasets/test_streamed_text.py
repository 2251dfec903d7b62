"""Sharded text streamed, never loaded whole: splits by a seeded hash (independent of shard count and order),
every format read alike, bad shards named, workers dividing the training rows, the scan cached, exact resume."""

import gzip
import logging
from pathlib import Path

import keras
import numpy as np
import pandas as pd
import pytest
import tensorflow as tf

from kpipe.config.training import TrainingConfig
from kpipe.datasets import shard_scan, shards
from kpipe.datasets.shard_scan import split_codes
from kpipe.datasets.streamed_text import Worker, load_streamed_text
from kpipe.datasets.text_classification import TextClassificationDataConfig
from kpipe.errors import DataError
from kpipe.training.loop import make_strategy, train_model
from tests.helpers import kill_after

ROWS = 600


def table(n=ROWS, seed=0):
    rng = np.random.default_rng(seed)
    words = np.array("good bad fine awful great poor nice dull".split())
    texts = [f"row {i} " + " ".join(rng.choice(words, 5)) for i in range(n)]
    labels = ["pos" if sum(w in t for w in ("good", "great", "nice", "fine")) > 2 else "neg" for t in texts]
    return pd.DataFrame({"id": [f"r{i}" for i in range(n)], "text": texts, "label": labels})


def write_shards(folder, frame, parts, formats=("parquet",), order=None):
    folder.mkdir(parents=True, exist_ok=True)
    pieces = np.array_split(np.arange(len(frame)), parts)
    for number, index in enumerate(pieces if order is None else [pieces[i] for i in order]):
        part, fmt = frame.iloc[index], formats[number % len(formats)]
        path = folder / f"part-{number:03d}.{fmt}"
        if fmt == "parquet":
            part.to_parquet(path)
        elif fmt == "csv.gz":
            part.to_csv(path, index=False)
        elif fmt == "tsv":
            part.to_csv(path, sep="\t", index=False)
        elif fmt.startswith("tfrecord"):
            write_records(path, part)
        else:
            part.to_json(path, orient="records", lines=True)
    return folder


def write_records(path, frame):
    """tf.train.Examples of the rows, each column a bytes feature."""
    options = tf.io.TFRecordOptions(compression_type="GZIP" if path.name.endswith(".gz") else "")
    with tf.io.TFRecordWriter(str(path), options) as writer:
        for row in frame.itertuples():
            feature = {name: tf.train.Feature(bytes_list=tf.train.BytesList(value=[str(getattr(row, name)).encode()]))
                       for name in frame.columns}
            writer.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())


def config(path, **kw):
    return TextClassificationDataConfig(source="shards", path=str(path), **kw)


def rows_of(examples):
    return [(t.decode(), int(y)) for t, y in examples.texts.as_numpy_iterator()]


@pytest.fixture(scope="module")
def frame():
    return table()


@pytest.fixture(scope="module")
def splits(frame, tmp_path_factory):
    folder = write_shards(tmp_path_factory.mktemp("shards"), frame, 6,
                          formats=("parquet", "csv.gz", "tsv", "jsonl", "tfrecord", "tfrecord.gz"))
    return load_streamed_text(config(folder / "*"), tmp_path_factory.mktemp("cache"))


def test_each_row_is_in_the_split_its_seeded_hash_names_whatever_the_shards(frame, splits, tmp_path):
    expected = split_codes(frame.text.to_numpy(), seed=1337, validation_fraction=0.1, test_fraction=0.1)
    other = load_streamed_text(config(write_shards(tmp_path / "s", frame, 7, order=[6, 3, 0, 5, 1, 4, 2])),
                               tmp_path / "cache")
    for code, name in enumerate(shard_scan.SPLITS):
        want = set(frame.text[expected == code])
        assert {t for t, _ in rows_of(getattr(splits, name))} == want
        assert {t for t, _ in rows_of(getattr(other, name))} == want
        assert len(getattr(splits, name)) == len(want)
    assert 0 < len(splits.test) < len(splits.train)


def test_every_format_gives_the_same_rows_and_labels(frame, splits):
    assert sorted(p.name.split(".", 1)[1] for p in splits.scan.shards) == [
        "csv.gz", "jsonl", "parquet", "tfrecord", "tfrecord.gz", "tsv"]
    labels = dict(zip(frame.text, frame.label))
    got = rows_of(splits.train) + rows_of(splits.validation) + rows_of(splits.test)
    assert len(got) == ROWS
    assert all(splits.label_names[y] == labels[t] for t, y in got)
    np.testing.assert_array_equal(splits.test.labels, [y for _, y in rows_of(splits.test)])


def test_split_hash_matches_an_independent_siphash_reference():
    # pandas' hash_array is SipHash-2-4 of the UTF-8 bytes; pin a value so a change of hash is noticed.
    codes = split_codes(np.array(["a", "b", "a"], dtype=object), seed=1, validation_fraction=0.3, test_fraction=0.3)
    assert codes[0] == codes[2]
    again = split_codes(np.array(["b", "a"], dtype=object), seed=1, validation_fraction=0.3, test_fraction=0.3)
    assert list(again) == [codes[1], codes[0]]
    u = shard_scan.hash_unit(np.array(["review"], dtype=object), 1337)
    assert 0.0 <= u[0] < 1.0 and u[0] == shard_scan.hash_unit(np.array(["x", "review"], dtype=object), 1337)[1]


def test_fitting_sample_is_bounded_seeded_and_from_the_training_split(frame, splits, tmp_path):
    small = load_streamed_text(config(write_shards(tmp_path / "a", frame, 3), fit_sample=50), tmp_path / "c1")
    reordered = load_streamed_text(config(write_shards(tmp_path / "b", frame, 5, order=[4, 2, 0, 1, 3]),
                                          fit_sample=50), tmp_path / "c2")
    assert len(small.fitting) == 50
    assert sorted(small.fitting.texts) == sorted(reordered.fitting.texts)
    assert set(small.fitting.texts) <= {t for t, _ in rows_of(splits.train)}
    assert len(splits.fitting) == len(splits.train)  # the default sample holds more rows than this table


def test_training_stream_is_shuffled_each_epoch_and_repeatable(splits):
    stream = splits.train.shuffled(seed=5)
    first, second = ([t for t, _ in stream.as_numpy_iterator()] for _ in range(2))
    assert sorted(first) == sorted(second) and first != second
    assert [t for t, _ in splits.train.shuffled(seed=5).as_numpy_iterator()] == first


def test_limit_keeps_a_seeded_sample_of_about_that_many_rows(frame, tmp_path):
    folder = write_shards(tmp_path / "s", frame, 3)
    limited = load_streamed_text(config(folder, limit=200), tmp_path / "c")
    total = len(limited.train) + len(limited.validation) + len(limited.test)
    assert total == 200
    assert sum(1 for _ in limited.train.texts) == len(limited.train)
    again = load_streamed_text(config(folder, limit=200), tmp_path / "c2")
    assert rows_of(again.test) == rows_of(limited.test)


@pytest.mark.parametrize("parts", [3, 1])
def test_two_workers_read_every_training_row_once(frame, tmp_path, parts):
    folder = write_shards(tmp_path / "s", frame, parts)
    every = load_streamed_text(config(folder), tmp_path / "c")
    seen = [t for index in range(2)
            for t, _ in load_streamed_text(config(folder), tmp_path / "c", Worker(index, 2)).train.texts.as_numpy_iterator()]
    assert sorted(seen) == sorted(t for t, _ in every.train.texts.as_numpy_iterator())
    assert len(seen) == len(set(seen))


def test_the_scan_is_cached_and_reused(frame, tmp_path, monkeypatch):
    folder = write_shards(tmp_path / "s", frame, 2)
    first = load_streamed_text(config(folder), tmp_path / "c")
    monkeypatch.setattr(shards, "read_batches", lambda *a, **k: (_ for _ in ()).throw(AssertionError("re-read")))
    again = load_streamed_text(config(folder), tmp_path / "c")
    assert rows_of(again.test) == rows_of(first.test)
    with pytest.raises(AssertionError, match="re-read"):  # other settings: scanned anew
        load_streamed_text(config(folder, seed=2), tmp_path / "c")


@pytest.mark.parametrize("setting", [{"fit_sample": 10}, {"shuffle_buffer": 5}, {"id_column": "id"},
                                     {"skip_bad_shards": True}])
def test_streaming_settings_on_data_that_is_not_sharded_are_refused_not_ignored(tmp_path, setting):
    with pytest.raises(ValueError, match=f"`{next(iter(setting))}` needs source='shards'"):
        TextClassificationDataConfig(source="file", path=str(tmp_path / "a.csv"), **setting)


def test_a_glob_that_matches_nothing_is_one_line(tmp_path):
    with pytest.raises(DataError, match=r"no shard matches .*nothing-\*\.parquet"):
        load_streamed_text(config(tmp_path / "nothing-*.parquet"), tmp_path / "c")


def test_a_scan_removes_the_partial_copies_of_scans_that_were_killed_and_keeps_running_ones(frame, tmp_path):
    """A scan killed with SIGKILL never runs its `finally`: its partial copy of the data is removed by the next scan
    (reliability finding 9), while a scan still running elsewhere keeps its own."""
    import subprocess
    import sys

    from kpipe.atomic import writer_host

    cache = tmp_path / "cache"
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    running = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        killed = cache / f"shards-0123456789abcdef.{writer_host()}-{int(gone.stdout)}.partial"
        alive = cache / f"shards-fedcba9876543210.{writer_host()}-{running.pid}.partial"
        for partial in (killed, alive):
            (partial / "train").mkdir(parents=True)
            (partial / "train" / "rows.tfrecord").write_bytes(b"x" * 1000)
        load_streamed_text(config(write_shards(tmp_path / "s", frame, 2)), cache)
        assert not killed.exists() and alive.exists()
        assert not list(cache.glob("*.partial"))[1:]  # the scan's own partial became its folder
    finally:
        running.kill()


def test_a_scan_removes_scans_no_run_used_for_a_week_and_a_reused_scan_counts_as_used(frame, tmp_path):
    """Every change of shards or settings writes a new whole copy of the data (reliability finding 9): scans unused
    for SCAN_UNUSED_DAYS go, recent ones stay (another config may train on them now)."""
    import os
    import time

    from kpipe.datasets.shard_scan import SCAN_FILE, SCAN_UNUSED_DAYS

    cache, week = tmp_path / "cache", SCAN_UNUSED_DAYS * 86400
    old, recent = cache / "shards-00000000000000aa", cache / "shards-00000000000000bb"
    for folder, age in ((old, week + 3600), (recent, week - 3600)):
        (folder / "train").mkdir(parents=True)
        (folder / SCAN_FILE).write_text("{}")
        os.utime(folder / SCAN_FILE, (time.time() - age, time.time() - age))
    shards = write_shards(tmp_path / "s", frame, 2)
    load_streamed_text(config(shards), cache)
    assert not old.exists() and recent.exists()
    (current,) = [f for f in cache.glob("shards-*") if f not in (old, recent)]
    os.utime(current / SCAN_FILE, (time.time() - week - 3600,) * 2)
    load_streamed_text(config(shards), cache)  # reused: marked used, so not removed
    assert current.exists() and time.time() - (current / SCAN_FILE).stat().st_mtime < 60


def test_a_scan_is_flushed_to_the_disk_before_it_takes_its_final_name(frame, tmp_path, monkeypatch):
    """The next run trusts a scan under its final name without reading the shards (reliability finding 19): its
    record files are flushed before the rename publishes it, so a power cut cannot leave it with empty ones."""
    import os

    events = []
    monkeypatch.setattr(shard_scan, "fsync_tree", lambda folder: events.append(("flush", Path(folder).name)))
    real_rename = os.rename
    monkeypatch.setattr(os, "rename", lambda a, b: (events.append(("rename", Path(a).name)), real_rename(a, b))[1])
    load_streamed_text(config(write_shards(tmp_path / "s", frame, 2)), tmp_path / "c")
    (partial,) = {name for kind, name in events if kind == "rename" and name.endswith(".partial")}
    assert events.index(("flush", partial)) < events.index(("rename", partial)), events


def test_shards_with_different_columns_are_named(frame, tmp_path):
    folder = write_shards(tmp_path / "s", frame, 2)
    frame.rename(columns={"id": "key"}).iloc[:10].to_parquet(folder / "part-999.parquet")
    with pytest.raises(DataError, match=r"different columns: .*part-999\.parquet.*differ in 'id', 'key'"):
        load_streamed_text(config(folder), tmp_path / "c")


def test_a_missing_column_names_the_setting(frame, tmp_path):
    with pytest.raises(DataError, match=r"no column 'review'.*data.text_column"):
        load_streamed_text(config(write_shards(tmp_path / "s", frame, 2), text_column="review"), tmp_path / "c")


def test_a_corrupt_shard_stops_the_run_or_is_skipped_and_counted(frame, tmp_path, caplog):
    folder = write_shards(tmp_path / "s", frame, 3, formats=("csv.gz",))
    whole = gzip.compress(frame.iloc[:300].to_csv(index=False).encode())
    (folder / "part-001.csv.gz").write_bytes(whole[:len(whole) // 2])  # a truncated download
    with pytest.raises(shards.BadShardError, match=r"part-001\.csv\.gz cannot be read.*skip_bad_shards=true"):
        load_streamed_text(config(folder), tmp_path / "c")
    with caplog.at_level(logging.WARNING):
        skipped = load_streamed_text(config(folder, skip_bad_shards=True), tmp_path / "c")
    assert [p.name for p in skipped.scan.skipped] == ["part-001.csv.gz"]
    assert skipped.report()["skipped_shards"] == [str(folder / "part-001.csv.gz")]
    assert "Skipping unreadable shard" in caplog.text
    total = len(skipped.train) + len(skipped.validation) + len(skipped.test)
    assert total == ROWS - 200 == sum(1 for s in (skipped.train, skipped.validation, skipped.test) for _ in s.texts)


def test_a_truncated_tfrecord_shard_is_named(frame, tmp_path):
    folder = write_shards(tmp_path / "s", frame, 2, formats=("tfrecord",))
    whole = (folder / "part-001.tfrecord").read_bytes()
    (folder / "part-001.tfrecord").write_bytes(whole[:len(whole) // 2])
    with pytest.raises(shards.BadShardError, match=r"part-001\.tfrecord cannot be read \(DataLossError"):
        load_streamed_text(config(folder), tmp_path / "c")


def test_duplicate_ids_are_refused(frame, tmp_path):
    doubled = frame.assign(id=["same"] * 2 + list(frame.id[2:]))
    with pytest.raises(DataError, match=r"id_column 'id' .* has 1 value\(s\) on more than one row \(2 rows\)"):
        load_streamed_text(config(write_shards(tmp_path / "s", doubled, 2), id_column="id"), tmp_path / "c")


def test_split_by_id_column_keeps_duplicate_texts_apart(frame, tmp_path):
    copies = pd.concat([frame, frame.assign(id=[f"copy{i}" for i in range(ROWS)])], ignore_index=True)
    by_id = load_streamed_text(config(write_shards(tmp_path / "s", copies, 2), id_column="id"), tmp_path / "c")
    assert len(by_id.train) + len(by_id.validation) + len(by_id.test) == 2 * ROWS
    expected = split_codes(copies.id.to_numpy(), seed=1337, validation_fraction=0.1, test_fraction=0.1)
    assert len(by_id.test) == int((expected == 2).sum())


def test_empty_texts_and_labels_are_dropped_and_counted(frame, tmp_path):
    holes = frame.assign(text=[""] * 5 + list(frame.text[5:]), label=list(frame.label[:595]) + [""] * 5)
    loaded = load_streamed_text(config(write_shards(tmp_path / "s", holes, 2)), tmp_path / "c")
    assert loaded.scan.dropped_empty == 10
    assert len(loaded.train) + len(loaded.validation) + len(loaded.test) == ROWS - 10


def resumable_training(work_dir, splits, crash_after=None):
    keras.utils.set_random_seed(7)  # as a run does before it builds its datasets (shuffle seeds combine with it)
    stream = splits.train.shuffled(seed=3)
    vectorize = keras.layers.TextVectorization(max_tokens=50, output_sequence_length=8)
    vectorize.adapt(tf.constant(["good bad fine awful great poor nice dull row"]))
    data = stream.batch(32).map(lambda t, y: (vectorize(t), tf.cast(y, tf.float32)))

    def build():
        inputs = keras.Input((8,), dtype="int64")
        h = keras.layers.Dropout(0.2)(keras.layers.GlobalAveragePooling1D()(keras.layers.Embedding(50, 8)(inputs)))
        return keras.Model(inputs, keras.layers.Dense(1, activation="sigmoid")(h))

    training = TrainingConfig(epochs=4, early_stopping_patience=0, learning_rate=0.05, seed=7)
    return train_model(build, loss="binary_crossentropy", metrics=["accuracy"], train_data=data, validation_data=None,
                       config=training, work_dir=work_dir, strategy=make_strategy("default"),
                       extra_callbacks=[kill_after(crash_after)] if crash_after is not None else [])


@pytest.mark.slow  # trains twice, killed and resumed
def test_a_streamed_run_killed_after_an_epoch_resumes_to_the_uninterrupted_model(splits, tmp_path):
    reference, _ = resumable_training(tmp_path / "reference", splits)
    with pytest.raises(KeyboardInterrupt):
        resumable_training(tmp_path / "run", splits, crash_after=1)
    resumed, history = resumable_training(tmp_path / "run", splits)
    assert len(history) == 4
    for a, b in zip(reference.get_weights(), resumed.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
