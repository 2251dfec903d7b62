"""Time series for forecasting: one config, embedded real series or a table, chronological splits.

Sources (`data.source`):
    embedded  a real series shipped in a PyPI package (`data.name`): "taylor" (half-hourly
              electricity demand, pmdarima) or "seattle-weather" (daily weather, vega_datasets).
    file      a CSV/TSV/Parquet file (`data.path`) with a time column, a target column and
              optional covariate columns.

The split is chronological (train, then validation, then test) and nothing is shuffled across it.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import ClassVar, TYPE_CHECKING

import numpy as np

from kpipe.config.constraints import check_fractions_sum, one_of, open_fraction, setting
from kpipe.datasets import embedded, files
from kpipe.datasets.source import DataSourceConfig
from kpipe.datasets.embedded import package_dir
from kpipe.errors import DataError, did_you_mean

if TYPE_CHECKING:
    import pandas as pd  # imported where used: it takes half a second, and parsing a config needs none

log = logging.getLogger(__name__)

FILL_RULES = ("reject", "ffill", "interpolate", "zero")


@dataclasses.dataclass(frozen=True, kw_only=True)
class TimeSeriesDataConfig(DataSourceConfig):
    """Where a series comes from, which columns to use, and how it is split.

    Args:
        source: "embedded" or "file".
        name: embedded series ("taylor", "seattle-weather").
        path: CSV/TSV/Parquet file (file source).
        time_column: column of timestamps ("" = the rows are in time order, no timestamps).
            Timestamps must be strictly increasing: out-of-order or duplicated times are an error.
        target_column: the column to forecast ("" = the embedded series' default target).
        covariates: other numeric columns fed to the model as inputs (the target always is).
        fill: what to do with missing values: "reject" (an error naming the column and row),
            "ffill" (carry the last value forward), "interpolate" (linear in time) or "zero".
        validation_fraction: the share of the series, after the training part, for validation.
        test_fraction: the last share of the series, for testing.
        encoding: text encoding of CSV/TSV files.
    """

    EXAMPLE_NAME: ClassVar[str] = "taylor"

    name: str = "taylor"
    time_column: str = ""
    target_column: str = ""
    covariates: tuple[str, ...] = ()
    fill: str = setting("reject", one_of(FILL_RULES))
    validation_fraction: float = setting(0.15, open_fraction())
    test_fraction: float = setting(0.15, open_fraction())

    def __post_init__(self):
        super().__post_init__()
        check_fractions_sum(self.validation_fraction, self.test_fraction)
        if self.source == "file" and not self.target_column:
            raise ValueError("`target_column` is required when source='file' (the column to forecast)")


@dataclasses.dataclass(frozen=True)
class TimeSeries:
    """A series ready for windowing: `values[:, 0]` is the target, the other columns covariates."""

    values: np.ndarray          # (time, features) float32, target first
    feature_names: list[str]    # column names, target first
    times: pd.DatetimeIndex | None  # one timestamp per row, or None
    train_end: int              # rows [0, train_end) train, [train_end, validation_end) validation,
    validation_end: int         # [validation_end, len) test

    def __len__(self) -> int:
        return len(self.values)

    @property
    def target(self) -> np.ndarray:
        return self.values[:, 0]

    @property
    def num_features(self) -> int:
        return self.values.shape[1]

    @property
    def target_name(self) -> str:
        return self.feature_names[0]

    def split_sizes(self) -> dict[str, int]:
        return {"train": self.train_end, "validation": self.validation_end - self.train_end,
                "test": len(self) - self.validation_end}


# === Embedded series ===

def read_taylor() -> tuple[pd.DataFrame, str]:
    """Half-hourly electricity demand (MW) in England and Wales, Monday 5 June to Sunday 27 August
    2000: 4,032 values (Taylor 2003), as shipped in pmdarima."""
    import pandas as pd
    package_dir("pmdarima", "'kpipe[data]' (or: pip install pmdarima)")
    from pmdarima.datasets import load_taylor

    demand = load_taylor()
    times = pd.date_range("2000-06-05 00:00", periods=len(demand), freq="30min")
    return pd.DataFrame({"time": times, "demand_mw": demand}), "demand_mw"


def read_seattle_weather() -> tuple[pd.DataFrame, str]:
    """Daily Seattle weather 2012-2015 (1,461 days): precipitation, temp_max, temp_min, wind."""
    import pandas as pd
    folder = package_dir("vega_datasets", "'kpipe[data]' (or: pip install vega_datasets)")
    frame = pd.read_csv(folder / "_data" / "seattle-weather.csv", parse_dates=["date"])
    frame = frame.rename(columns={"date": "time"})
    return frame[["time", "temp_max", "temp_min", "precipitation", "wind"]], "temp_max"


# === Checks ===

def check_times(times: pd.Series, column: str, source: str) -> pd.DatetimeIndex:
    """Parse a time column; raise DataError for empty, duplicated or out-of-order times (naming the row)."""
    import pandas as pd
    try:
        parsed = pd.to_datetime(times)
    except (ValueError, TypeError) as error:
        raise DataError(f"{source}: time column '{column}' has values that are not dates/times ({error})") from None
    if parsed.isna().any():
        row = int(np.flatnonzero(parsed.isna())[0])
        raise DataError(f"{source}: time column '{column}' is empty at row {row + 1}")
    steps = np.diff(parsed.to_numpy().astype("datetime64[ns]").astype(np.int64))
    if (steps == 0).any():
        row = int(np.flatnonzero(steps == 0)[0]) + 1
        raise DataError(f"{source}: duplicated timestamp {parsed.iloc[row]} at rows {row} and {row + 1}; "
                        "each time must appear once (aggregate the duplicates first)")
    if (steps < 0).any():
        row = int(np.flatnonzero(steps < 0)[0]) + 1
        raise DataError(f"{source}: timestamps out of order at row {row + 1} ({parsed.iloc[row]} comes after "
                        f"{parsed.iloc[row - 1]}); sort the file by '{column}'")
    return pd.DatetimeIndex(parsed)


def _fill_missing(frame: pd.DataFrame, rule: str, source: str) -> pd.DataFrame:
    missing = frame.isna()
    if not missing.any().any():
        return frame
    counts = {c: int(n) for c, n in missing.sum().items() if n}
    if rule == "reject":
        column = next(iter(counts))
        row = int(np.flatnonzero(missing[column])[0])
        raise DataError(f"{source}: {sum(counts.values())} missing value(s) ({', '.join(f'{c}: {n}' for c, n in counts.items())}"
                        f"; first in '{column}' at row {row + 1}); set data.fill to \"ffill\", \"interpolate\" "
                        "or \"zero\", or clean the file")
    log.warning("Filling %s missing value(s) with rule '%s': %s", sum(counts.values()), rule, counts)
    if rule == "zero":
        return frame.fillna(0.0)
    filled = frame.ffill() if rule == "ffill" else frame.interpolate(limit_direction="both")
    return filled.bfill()  # leading gaps have nothing before them


def numeric_columns(frame: pd.DataFrame, columns: list[str], source: str) -> pd.DataFrame:
    """`columns` as numbers (empty cells -> NaN); raise DataError naming the first value that is not a number."""
    import pandas as pd
    out = {}
    for column in columns:
        values = pd.to_numeric(frame[column].replace("", np.nan), errors="coerce")
        bad = values.isna() & frame[column].notna() & (frame[column].astype(str).str.strip() != "")
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise DataError(f"{source}: column '{column}' is not numeric (row {row + 1}: {frame[column].iloc[row]!r})")
        # float32 is what the model computes in: an infinite value, or one past its range (1e39), trains to NaN
        too_large = ~np.isfinite(values.to_numpy(dtype=np.float64, na_value=0.0)) | (
            values.abs().to_numpy(dtype=np.float64, na_value=0.0) > np.finfo(np.float32).max)
        if too_large.any():
            row = int(np.flatnonzero(too_large)[0])
            raise DataError(f"{source}: column '{column}' holds {int(too_large.sum())} infinite or too large values "
                            f"(row {row + 1}: {frame[column].iloc[row]}; float32 holds up to 3.4e38); fix or "
                            "remove them, or rescale the column")
        out[column] = values
    return pd.DataFrame(out)


# === Loading ===

def load_time_series(config: TimeSeriesDataConfig) -> TimeSeries:
    """Read, check, fill and split a series as `config` says.

    Raises:
        DataError: missing file or columns, non-numeric values, missing values with fill="reject",
            duplicated or out-of-order timestamps, a series too short to split.
    """
    if config.source == "embedded":
        frame, default_target = embedded.read(config.name, "time series")
        time_column = config.time_column or "time"
        target = config.target_column or default_target
    else:
        frame = files.read_table(config.path, encoding=config.encoding, missing_as_nan=True)
        time_column, target = config.time_column, config.target_column
    source = config.describe()
    columns = [target] + [c for c in config.covariates if c != target]
    for column in columns + ([time_column] if time_column else []):
        if column not in frame.columns:
            raise DataError(f"{source} has no column '{column}'{did_you_mean(column, map(str, frame.columns))}; "
                            f"columns: {', '.join(map(str, frame.columns))}")
    times = check_times(frame[time_column], time_column, source) if time_column else None
    values = _fill_missing(numeric_columns(frame, columns, source), config.fill, source)
    n = len(values)
    validation_end = n - int(round(n * config.test_fraction))
    train_end = validation_end - int(round(n * config.validation_fraction))
    if train_end < 2 or validation_end - train_end < 1 or n - validation_end < 1:
        raise DataError(f"{source} has {n} rows: too few to split into train/validation/test")
    series = TimeSeries(values.to_numpy(np.float32), columns, times, train_end, validation_end)
    log.info("Series %s: %d rows (%s), features %s", source, n, series.split_sizes(), columns)
    return series
