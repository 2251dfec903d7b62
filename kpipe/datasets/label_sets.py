"""Several labels per text: a column of label sets (`data.label_separator`) or one 0/1 column per label
(`data.label_columns`) -> a (rows, labels) 0/1 matrix, with the labels too rare to learn dropped.

The empty string is the empty set (a text with no label is an example, not a missing value). A label
column that looks like sets while no separator is set gets one warning naming the separator to set:
otherwise every combination would silently become a class of its own.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Sequence

import numpy as np

from kpipe.errors import DataError

if TYPE_CHECKING:
    import pandas as pd

log = logging.getLogger(__name__)
SET_SEPARATORS = ("|", ";", ",")


def warn_if_sets(labels: pd.Series, where: str) -> None:
    """One warning when many distinct single-label values hold a separator: sets read as one class each."""
    values = labels.dropna().astype(str).unique()
    if len(values) < 3:
        return
    for separator in SET_SEPARATORS:
        holding = sum(separator in value for value in values)
        if holding >= max(2, len(values) // 5):
            log.warning("The label column of %s looks like sets of labels (%d of its %d distinct values hold "
                        "'%s'); each combination is a class of its own unless you set data.label_separator='%s'",
                        where, holding, len(values), separator, separator)
            return


def parse_sets(labels: pd.Series, separator: str) -> list[frozenset[str]]:
    """Each row's set of labels; NaN and the empty string are the empty set."""
    sets = []
    for value in labels:
        text = "" if value is None or value != value else str(value)
        sets.append(frozenset(part.strip() for part in text.split(separator) if part.strip()))
    return sets


def sets_from_columns(frame: pd.DataFrame, columns: Sequence[str], where: str) -> list[frozenset[str]]:
    """Each row's set: the columns holding 1 (or true). Anything but 0/1 (or true/false) is an error."""
    import pandas as pd

    matrix = []
    for column in columns:
        values = frame[column]
        numeric = pd.to_numeric(values.map({True: 1, False: 0, "true": 1, "false": 0, "True": 1, "False": 0})
                                .fillna(values), errors="coerce")
        if numeric.isna().any() or not numeric.isin([0, 1]).all():
            bad = values[numeric.isna() | ~numeric.isin([0, 1])].iloc[0]
            bad = bad.item() if hasattr(bad, "item") else bad  # a NumPy scalar, shown as the number it is
            raise DataError(f"label column '{column}' of {where} holds {bad!r}; a label column holds 0 or 1 "
                            "(or true/false) per row")
        matrix.append(numeric.to_numpy(dtype=np.int8))
    stacked = np.stack(matrix, axis=1) if matrix else np.zeros((len(frame), 0), np.int8)
    return [frozenset(c for c, on in zip(columns, row) if on) for row in stacked]


def label_matrix(sets: Sequence[frozenset[str]], names: Sequence[str]) -> np.ndarray:
    """(rows, labels) float32 0/1 matrix of `sets` over `names` (labels outside `names` are left out)."""
    index = {name: i for i, name in enumerate(names)}
    matrix = np.zeros((len(sets), len(names)), np.float32)
    for row, labels in enumerate(sets):
        for label in labels:
            if label in index:
                matrix[row, index[label]] = 1.0
    return matrix


def kept_labels(train_sets: Sequence[frozenset[str]], min_count: int, where: str) -> list[str]:
    """The labels with at least `min_count` training examples, sorted; the others named in one log line.

    Raises:
        DataError: no label at all, or fewer than two labels left to learn.
    """
    from collections import Counter

    counts = Counter(label for labels in train_sets for label in labels)
    if not counts:
        raise DataError(f"the label column of {where} holds no labels at all (every row's set is empty); check "
                        "data.label_column and data.label_separator (or data.label_columns)")
    rare = sorted(label for label, count in counts.items() if count < min_count)
    if rare:
        shown = ", ".join(f"{label} ({counts[label]})" for label in rare[:20])
        log.info("Dropped %d label(s) with fewer than %d training examples (data.min_label_count): %s%s",
                 len(rare), min_count, shown, ", ..." if len(rare) > 20 else "")
    kept = sorted(label for label, count in counts.items() if count >= min_count)
    if len(kept) < 2:
        raise DataError(f"{where}: {len(kept)} label(s) have at least {min_count} training examples; a multi-label "
                        "classifier needs two or more: lower data.min_label_count or bring more data")
    return kept
