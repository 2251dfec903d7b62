"""Labelled text larger than memory, as splits that stream: after the one scan of the shards
(`kpipe.datasets.shard_scan`), each split is a tf.data pipeline of (text, label id) rows read from the record
files the scan wrote, never held whole; the fitting sample is the only part in memory."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

import numpy as np

from kpipe.datasets.shard_scan import ShardScan, scan_shards
from kpipe.errors import DataError

if TYPE_CHECKING:
    import tensorflow as tf

    from kpipe.datasets.text_classification import TextClassificationDataConfig, TextExamples

log = logging.getLogger(__name__)
READ_TOGETHER = 4  # training reads blocks of this many record files in turn


@dataclasses.dataclass(frozen=True)
class Worker:
    """Which part of the shards this process reads: all of them outside multi-worker training."""

    index: int = 0
    count: int = 1


@dataclasses.dataclass
class ShardedText:
    """Rows of each split as the scan wrote them (`scan_shards`): one TFRecord file per shard and split, each
    record a block of rows [text, label, sample hash]; read by tf.data's own file reader, in parallel and
    without Python."""

    config: TextClassificationDataConfig
    files: dict[str, list[str]]    # split -> record files, in shard order
    label_lookup: dict[str, int]
    limit_below: float = 1.0       # data.limit: rows whose sample hash is below this
    worker: Worker = Worker()
    _lookup_table: object = dataclasses.field(default=None, init=False, repr=False)  # made on first use

    def worker_files(self, split: str) -> tuple[list[str], bool]:
        """This worker's record files of `split`, and whether rows are divided inside them instead (fewer files
        than workers: every worker reads every file and keeps the rows at positions = its index, modulo workers).
        Only training is divided; every worker scores validation and test whole."""
        files = self.files[split]
        if self.worker.count == 1 or split != "train":
            return files, False
        if len(files) >= self.worker.count:
            return files[self.worker.index::self.worker.count], False
        return files, True

    def rows(self, split: str, *, shuffle: bool = False, seed: int = 0, buffer: int = 0) -> tf.data.Dataset:
        """A tf.data pipeline of (text, label id) rows of `split`.

        Training passes read several files in turn and shuffle the rows through a `buffer`-row buffer, seeded and
        reshuffled on every pass (creating an iterator advances the seed, which exact resume relies on).
        Auto-sharding is off: under multi-worker training the rows are already this worker's.
        """
        import tensorflow as tf

        files, by_row = self.worker_files(split)
        names = tf.data.Dataset.from_tensor_slices(tf.constant(files, tf.string, shape=[len(files)]))
        # Training reads blocks from up to READ_TOGETHER files in turn (one file at a time otherwise), so the buffer
        # mixes shards. The file order itself is fixed: a second reshuffling shuffle in the pipeline breaks exact
        # resume (creating an iterator no longer advances the seeds as a full pass does; TF 2.21).
        blocks = names.interleave(tf.data.TFRecordDataset, cycle_length=min(READ_TOGETHER, len(files)) if shuffle else 1)
        table, below = self._table(), self.limit_below

        def columns(record):  # a block of rows [text, label, sample hash] -> (texts, label ids), vectorized
            block = tf.ensure_shape(tf.io.parse_tensor(record, tf.string), [None, 3])
            texts, labels = block[:, 0], table.lookup(block[:, 1])
            if below < 1.0:  # data.limit
                kept = tf.strings.to_number(block[:, 2], tf.float64) < below
                texts, labels = tf.boolean_mask(texts, kept), tf.boolean_mask(labels, kept)
            return texts, labels

        rows = blocks.map(columns).unbatch()
        if by_row:
            rows = rows.shard(self.worker.count, self.worker.index)
        if shuffle:
            rows = rows.shuffle(buffer, seed=seed + 1, reshuffle_each_iteration=True)
        options = tf.data.Options()
        options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
        return rows.with_options(options)

    def _table(self):
        import tensorflow as tf

        if self._lookup_table is None:
            keys = list(self.label_lookup)
            self._lookup_table = tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(
                tf.constant(keys, tf.string), tf.constant([self.label_lookup[k] for k in keys], tf.int32)), -1)
        return self._lookup_table

    def split_batches(self, split: str, batch_rows: int = 4096) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """(texts as bytes, label ids) of `split` a batch at a time, in order (for scikit-learn and metrics)."""
        yield from self.rows(split).batch(batch_rows).as_numpy_iterator()


@dataclasses.dataclass
class StreamedExamples:
    """One split of sharded data: its size (from the scan), its rows as a tf.data pipeline (`texts`, in shard
    order), and its label ids in the same order (`labels`, read on first use: one int32 per row)."""

    source: ShardedText
    split: str
    count: int
    _labels: np.ndarray | None = None

    def __len__(self) -> int:
        return self.count

    @property
    def texts(self) -> tf.data.Dataset:
        return self.source.rows(self.split)

    @property
    def labels(self) -> np.ndarray:
        if self._labels is None:
            parts = [labels for _, labels in self.source.split_batches(self.split)]
            self._labels = np.concatenate(parts) if parts else np.zeros(0, np.int32)
        return self._labels

    def shuffled(self, seed: int) -> tf.data.Dataset:
        """The rows for training, shuffled through a bounded buffer (`data.shuffle_buffer`)."""
        return self.source.rows(self.split, shuffle=True, seed=seed, buffer=self.source.config.shuffle_buffer)


@dataclasses.dataclass(frozen=True)
class StreamedSplits:
    """The three splits of sharded data, as `TextSplits` has them for data in memory, plus the fitting
    sample (`fitting`: the training rows held in memory to fit preprocessing on) and, with
    data.fit_vocabulary="counts", `counting`: every training row (of every worker), to count vocabularies over."""

    train: StreamedExamples
    validation: StreamedExamples
    test: StreamedExamples
    fitting: TextExamples
    label_names: tuple[str, ...]
    scan: ShardScan
    counting: StreamedExamples | None = None
    multi_label: bool = False
    pairs: bool = False
    streamed: bool = True

    @property
    def num_classes(self) -> int:
        return len(self.label_names)

    def report(self) -> dict:
        """What metrics.json says of the data."""
        scan = self.scan
        return {"shards": len(scan.shards), "skipped_shards": [str(p) for p in scan.skipped],
                "fitting_sample": len(self.fitting), "fit_vocabulary": self.train.source.config.fit_vocabulary,
                "dropped_empty": scan.dropped_empty,
                "split": "seeded hash of " + (self.train.source.config.id_column or "the text")}


def load_streamed_text(config: TextClassificationDataConfig, cache_dir: Path,
                       worker: Worker = Worker()) -> StreamedSplits:
    """Scan the shards `config.path` names and return their splits as streams (see the module).

    Raises:
        DataError: as `scan_shards`, or fewer than two classes.
    """
    import pandas as pd

    from kpipe.datasets.text_classification import TextExamples, label_ids

    if config.multi_label or config.pairs:
        raise DataError("sharded data (a glob or a folder of shards) takes one text and one label per row for now; "
                        "several labels per text or pairs of texts need a single file (--data FILE)")
    scan = scan_shards(config, cache_dir)
    values = sorted(scan.label_counts)
    names, ids = label_ids(pd.Series(values, dtype=object), config)
    if len(set(ids.tolist())) < 2:
        raise DataError(f"the label column of {config.describe()} has a single class ({values[0]!r}); a classifier "
                        "needs at least two (check data.label_column)")
    lookup = dict(zip(values, ids.tolist()))
    # Training reads this worker's part; validation and test (scored by every worker alike) read everything.
    source = ShardedText(config, scan.files, lookup, scan.limit_below, worker)
    everything = ShardedText(config, scan.files, lookup, scan.limit_below)
    fitting = TextExamples(np.array(scan.sample_texts, dtype=object),
                           np.array([lookup[y] for y in scan.sample_labels], np.int32))
    splits = StreamedSplits(StreamedExamples(source, "train", scan.counts["train"]),
                            StreamedExamples(everything, "validation", scan.counts["validation"]),
                            StreamedExamples(everything, "test", scan.counts["test"]), fitting, tuple(names), scan,
                            StreamedExamples(everything, "train", scan.counts["train"])
                            if config.fit_vocabulary == "counts" else None)
    files, by_row = source.worker_files("train")
    log.info("Data %s: %d shard(s)%s, streamed: %d train / %d validation / %d test rows, %d classes (%s); "
             "preprocessing fitted on %s%s%s", config.describe(), len(scan.shards),
             f" ({len(scan.skipped)} unreadable, skipped)" if scan.skipped else "",
             scan.counts["train"], scan.counts["validation"], scan.counts["test"], len(names), ", ".join(names),
             f"a seeded sample of {len(fitting)} training rows (data.fit_sample)" if config.fit_sample
             else f"all {len(fitting)} training rows (data.fit_sample=0)",
             "; word vocabularies and n-gram tables counted over every training row (data.fit_vocabulary)"
             if config.fit_vocabulary == "counts" else "",
             f"; dropped {scan.dropped_empty} rows with an empty text or label" if scan.dropped_empty else "")
    if worker.count > 1:
        log.info("Worker %d of %d reads %s", worker.index, worker.count,
                 f"every shard, keeping rows {worker.index} modulo {worker.count} (fewer shards than workers)"
                 if by_row else f"{len(files)} of the {len(scan.files['train'])} shards' training rows")
    return splits
