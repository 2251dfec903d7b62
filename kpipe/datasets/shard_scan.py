"""The one pass over a set of shards that streaming starts with (`scan_shards`): every shard checked (columns,
readability), the rows of each split and each label counted, a bounded seeded sample of training rows kept for
fitting preprocessing, and each split's rows written as TFRecord blocks that tf.data reads from then on.

The split of a row is a seeded hash of its key (`data.id_column`, else the text itself): it does not depend on
the order or number of shards, and is the same on every worker and every rerun. The fitting sample is the
training rows with the smallest values of a second hash, so it too is independent of shard order; `data.limit`
keeps the rows with the smallest values of that hash over all splits.
"""

from __future__ import annotations

import dataclasses
import logging
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

import numpy as np

from kpipe.atomic import fsync_folder, fsync_tree, remove_abandoned, writer_tag
from kpipe.datasets import shards as shard_files
from kpipe.errors import DataError

if TYPE_CHECKING:
    import pandas as pd

    from kpipe.datasets.text_classification import TextClassificationDataConfig

log = logging.getLogger(__name__)
SPLITS = ("train", "validation", "test")


def hash_unit(keys: np.ndarray, seed: int) -> np.ndarray:
    """A seeded hash of each key as a float in [0, 1): pandas' SipHash of the string (the same on every
    machine, whatever the batch or the order), keyed by `seed`."""
    import pandas as pd

    hashed = pd.util.hash_array(np.asarray(keys, dtype=object), hash_key=f"kpipe-{seed:010d}"[-16:].rjust(16, "0"),
                                categorize=False)
    return (hashed >> np.uint64(11)).astype(np.float64) / float(1 << 53)


def split_codes(keys: np.ndarray, *, seed: int, validation_fraction: float, test_fraction: float) -> np.ndarray:
    """0 (train), 1 (validation) or 2 (test) for each key, from `hash_unit` (the test split first, as
    `kpipe.datasets.splits.split_of_key` orders them)."""
    u = hash_unit(keys, seed)
    return np.where(u < test_fraction, 2, np.where(u < test_fraction + validation_fraction, 1, 0)).astype(np.int8)


def clean_batches(path: Path, config: TextClassificationDataConfig,
                  dropped: list[int]) -> Iterator[tuple[pd.DataFrame, np.ndarray, np.ndarray]]:
    """The rows of one shard a batch at a time: (frame of text, label and key columns, split codes, sample-hash
    values), rows with an empty text or label dropped (counted in `dropped[0]`)."""
    columns = list(dict.fromkeys([config.text_column, config.label_column, *([config.id_column] if config.id_column
                                                                             else [])]))
    for frame in shard_files.read_batches(path, columns, encoding=config.encoding):
        size = len(frame)
        frame = frame[(frame[config.text_column].str.strip() != "") & (frame[config.label_column].str.strip() != "")]
        dropped[0] += size - len(frame)
        if frame.empty:
            continue
        keys = frame[config.id_column or config.text_column].to_numpy()
        yield (frame, split_codes(keys, seed=config.seed, validation_fraction=config.validation_fraction,
                                  test_fraction=config.test_fraction), hash_unit(keys, config.seed + 1))


@dataclasses.dataclass
class ShardScan:
    """What one pass over every shard found, and where it wrote each split's rows."""

    shards: list[Path]
    skipped: list[Path]
    counts: dict[str, int]
    label_counts: Counter
    sample_texts: list[str]
    sample_labels: list[str]
    limit_below: float
    dropped_empty: int
    files: dict[str, list[str]]
    stamp: str = ""

    def to_json(self) -> dict:
        return {**{k: v for k, v in dataclasses.asdict(self).items() if k not in ("shards", "skipped")},
                "shards": [str(p) for p in self.shards], "skipped": [str(p) for p in self.skipped],
                "label_counts": dict(self.label_counts)}

    @classmethod
    def from_json(cls, data: dict) -> ShardScan:
        return cls(**{**data, "shards": [Path(p) for p in data["shards"]],
                      "skipped": [Path(p) for p in data["skipped"]], "label_counts": Counter(data["label_counts"])})

    def fingerprint_parts(self) -> list:
        """What the export's data fingerprint covers: the shards' names, sizes and modification times."""
        return [self.stamp]


SCAN_UNUSED_DAYS = 7  # a scan no run has used for this long is removed by the next scan of the same cache
SCAN_FILE = "scan.json"
SCAN_FORMAT = 1  # bump when the record layout changes: older caches are then ignored


def scan_stamp(config: TextClassificationDataConfig, paths: list[Path]) -> str:
    """A hash of everything a scan's output depends on: each shard's path, size and modification time, and the
    settings that decide the columns, splits, limit and sample."""
    import hashlib

    digest = hashlib.sha256(repr((SCAN_FORMAT, config.text_column, config.label_column, config.id_column,
                                  config.seed, config.validation_fraction, config.test_fraction, config.limit,
                                  config.fit_sample, config.encoding, config.skip_bad_shards)).encode())
    for p in paths:
        stat = p.stat()
        digest.update(f"{p.resolve()}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


def scan_shards(config: TextClassificationDataConfig, cache_dir: Path) -> ShardScan:
    """Read every shard once: check columns, count rows per split and label, keep the fitting sample, and write
    each split's rows as record files under `cache_dir` (reused by the next run on the same shards and settings).

    Memory is bounded by `data.fit_sample` rows (plus `data.limit` hash values with a limit, and one 8-byte hash
    per row with `data.id_column`, to find duplicate keys).

    Raises:
        DataError: no shard, shards with different columns, an unreadable shard (unless
            `data.skip_bad_shards`), duplicate values in `data.id_column`, or too few rows to split.
    """
    import json
    import os
    import shutil

    paths = shard_files.list_shards(config.path)
    stamp = scan_stamp(config, paths)
    folder = Path(cache_dir) / f"shards-{stamp}"
    if (folder / SCAN_FILE).is_file():
        scan = ShardScan.from_json(json.loads((folder / SCAN_FILE).read_text(encoding="utf-8")))
        log.info("Shards scanned before: %d rows' splits, counts and fitting sample from the cache %s",
                 sum(scan.counts.values()), folder)
        os.utime(folder / SCAN_FILE)  # used now: eviction counts from a scan's last use
        evict_unused_scans(Path(cache_dir), keep=folder)
        return scan
    # scans killed before they finished (kill -9: their `finally` never ran) leave whole copies of the data behind
    for left in remove_abandoned(Path(cache_dir), "shards-*.partial",
                                 lambda name: name.removesuffix(".partial").partition(".")[2]):  # the writer
        log.info("Removed %s, left by a scan that was killed", left)
    partial = folder.with_name(f"{folder.name}.{writer_tag()}.partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    try:
        scan = _scan(config, paths, partial, folder)
        scan.stamp = stamp
        (partial / SCAN_FILE).write_text(json.dumps(scan.to_json()), encoding="utf-8")
        # flushed before the rename: after a power cut, a scan under its final name is whole (the next run trusts
        # it without reading the shards again), never one with empty record files
        fsync_tree(partial)
        try:
            os.rename(partial, folder)
            fsync_folder(folder.parent)
        except OSError:  # another worker of the same run wrote it first
            pass
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    evict_unused_scans(Path(cache_dir), keep=folder)
    return scan


def evict_unused_scans(cache_dir: Path, keep: Path, max_age_s: float = SCAN_UNUSED_DAYS * 86400) -> list[Path]:
    """Remove the finished scans in `cache_dir` that no run has used for `max_age_s` (a scan is a whole copy of the
    data: every change of shards or settings writes a new one), never `keep`, the one this run uses. A scan is
    marked used each time a run reuses it, so one still in use by a long run elsewhere is kept."""
    import shutil
    import time

    removed = []
    for folder in sorted(cache_dir.glob("shards-*")):
        marker = folder / SCAN_FILE
        if folder == keep or folder.name.endswith(".partial") or not marker.is_file():
            continue
        try:
            unused = time.time() - marker.stat().st_mtime > max_age_s
        except OSError:
            continue
        if unused:
            shutil.rmtree(folder, ignore_errors=True)
            log.info("Removed %s: a scan of shards no run has used for %d days", folder, SCAN_UNUSED_DAYS)
            removed.append(folder)
    return removed


def _scan(config: TextClassificationDataConfig, paths: list[Path], partial: Path, folder: Path) -> ShardScan:
    import tensorflow as tf

    first_columns, good, skipped = None, [], []
    counts, label_counts, dropped = np.zeros(3, np.int64), Counter(), 0
    sample = _SmallestKept(config.fit_sample or None)
    limited = _SmallestKept(config.limit or None)
    key_hashes, files = [], {split: [] for split in SPLITS}
    log.info("Scanning %d shard(s) of %s: splits, labels, a fitting sample; each split's rows written to %s",
             len(paths), config.path, folder)
    for number, path in enumerate(paths):
        names = [f"{number:06d}.{split}.tfrecord" for split in SPLITS]
        writers = {}
        try:
            columns = shard_files.columns_of(path, encoding=config.encoding)
            if first_columns is None:
                first_columns = columns
            elif set(columns) != set(first_columns):
                differ = sorted(set(columns) ^ set(first_columns))
                raise DataError(f"shards have different columns: {path} has {', '.join(map(repr, columns))}, "
                                f"{paths[0]} has {', '.join(map(repr, first_columns))} (they differ in "
                                f"{', '.join(map(repr, differ))}); give shards of one table")
            shard_counts, shard_labels, shard_dropped, shard_keys = np.zeros(3, np.int64), Counter(), [0], []
            for frame, codes, hashes in clean_batches(path, config, shard_dropped):
                shard_counts += np.bincount(codes, minlength=3)
                labels = frame[config.label_column].to_numpy(dtype=object)
                texts = frame[config.text_column].to_numpy(dtype=object)
                if config.limit:
                    limited.add(hashes, np.c_[codes, labels])
                else:
                    shard_labels.update(labels.tolist())
                train = codes == 0
                sample.add(hashes[train], np.c_[texts, labels][train])
                if config.id_column:
                    import pandas as pd

                    shard_keys.append(pd.util.hash_array(frame[config.id_column].to_numpy(dtype=object),
                                                         categorize=False))
                for code in np.unique(codes):
                    chosen = codes == code
                    if code not in writers:
                        writers[code] = tf.io.TFRecordWriter(str(partial / names[code]))
                    block = np.stack([texts[chosen], labels[chosen], hashes[chosen].astype(str)], axis=1)
                    writers[code].write(tf.io.serialize_tensor(tf.constant(block.astype(object), tf.string)).numpy())
        except shard_files.BadShardError as error:
            for writer in writers.values():
                writer.close()
            for name in names:
                (partial / name).unlink(missing_ok=True)
            if not config.skip_bad_shards:
                raise
            log.warning("Skipping unreadable shard %s (data.skip_bad_shards): %s", path, str(error).split("(", 1)[-1])
            skipped.append(path)
            continue
        for writer in writers.values():
            writer.close()
        for code in writers:
            files[SPLITS[code]].append(str(folder / names[code]))
        good.append(path)
        counts += shard_counts
        label_counts.update(shard_labels)
        dropped += shard_dropped[0]
        key_hashes.extend(shard_keys)
    if key_hashes:
        _check_unique_keys(np.concatenate(key_hashes), config)
    limit_below = 1.0
    if config.limit and limited.size:
        limit_below = limited.threshold()
        kept = limited.values()
        counts = np.bincount(kept[:, 0].astype(np.int64), minlength=3)
        label_counts = Counter(kept[:, 1].tolist())
    rows = sample.values(below=limit_below)
    if counts[0] == 0 or counts[2] == 0:
        raise DataError(f"{config.describe()} has {int(counts.sum())} usable rows in {len(good)} shard(s): too few "
                        "to split into train and test")
    return ShardScan(good, skipped, dict(zip(SPLITS, counts.tolist())), label_counts,
                     [str(t) for t in rows[:, 0]], [str(y) for y in rows[:, 1]], limit_below, dropped, files)


def _check_unique_keys(hashes: np.ndarray, config: TextClassificationDataConfig) -> None:
    unique, counts = np.unique(hashes, return_counts=True)
    repeated = int((counts > 1).sum())
    if repeated:
        raise DataError(f"data.id_column {config.id_column!r} of {config.describe()} has {repeated} value(s) on more "
                        f"than one row ({int(counts[counts > 1].sum())} rows): ids must be unique; fix the ids or "
                        "set data.id_column='' to split by the text")


class _SmallestKept:
    """The rows with the `size` smallest hash values seen so far (all rows when `size` is None), in bounded
    memory: a buffer cut back to `size` whenever it doubles."""

    def __init__(self, size: int | None):
        self.size_limit = size
        self.hashes, self.rows = [], []
        self.size = 0

    def add(self, hashes: np.ndarray, rows: np.ndarray) -> None:
        if not len(hashes):
            return
        self.hashes.append(hashes)
        self.rows.append(rows)
        self.size += len(hashes)
        if self.size_limit and self.size > 2 * self.size_limit:
            self._cut()

    def _cut(self) -> None:
        hashes, rows = np.concatenate(self.hashes), np.concatenate(self.rows)
        if self.size_limit and len(hashes) > self.size_limit:
            keep = np.argsort(hashes, kind="stable")[:self.size_limit]
            hashes, rows = hashes[keep], rows[keep]
        self.hashes, self.rows, self.size = [hashes], [rows], len(hashes)

    def threshold(self) -> float:
        """The largest kept hash, nudged up: rows below it are the kept ones."""
        self._cut()
        return float(np.nextafter(self.hashes[0].max(), 2.0)) if self.size else 1.0

    def values(self, below: float = 1.0) -> np.ndarray:
        if not self.size:
            return np.zeros((0, 2), object)
        self._cut()
        hashes, rows = self.hashes[0], self.rows[0]
        order = np.argsort(hashes, kind="stable")
        return rows[order][hashes[order] < below]
