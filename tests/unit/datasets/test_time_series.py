import numpy as np
import pandas as pd
import pytest

from kpipe.datasets.time_series import TimeSeriesDataConfig, load_time_series
from kpipe.errors import DataError


def write_series(tmp_path, frame, name="series.csv"):
    path = tmp_path / name
    frame.to_csv(path, index=False)
    return str(path)


def hourly(n=100, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"when": pd.date_range("2024-01-01", periods=n, freq="h").astype(str),
                         "load": rng.normal(10, 1, n).round(3), "temp": rng.normal(0, 1, n).round(3)})


def test_taylor_is_the_real_series_split_in_time_order():
    series = load_time_series(TimeSeriesDataConfig(name="taylor"))
    assert len(series) == 4032 and series.feature_names == ["demand_mw"]
    np.testing.assert_array_equal(series.target[:4], [22262, 21756, 22247, 22759])  # pmdarima's docstring
    assert series.times[0] == pd.Timestamp("2000-06-05 00:00") and series.times[-1] == pd.Timestamp("2000-08-27 23:30")
    assert series.split_sizes() == {"train": 2822, "validation": 605, "test": 605}


def test_seattle_weather_is_multivariate_with_the_target_first():
    config = TimeSeriesDataConfig(name="seattle-weather", target_column="temp_max", covariates=("temp_min", "wind"))
    series = load_time_series(config)
    assert len(series) == 1461 and series.feature_names == ["temp_max", "temp_min", "wind"]
    assert series.values.dtype == np.float32 and series.values.shape == (1461, 3)
    assert series.times[0] == pd.Timestamp("2012-01-01")


def test_file_source_with_time_target_and_covariates(tmp_path):
    frame = hourly()
    config = TimeSeriesDataConfig(source="file", path=write_series(tmp_path, frame), time_column="when",
                                  target_column="load", covariates=("temp",), validation_fraction=0.2,
                                  test_fraction=0.1)
    series = load_time_series(config)
    np.testing.assert_allclose(series.values, frame[["load", "temp"]].to_numpy(), rtol=1e-6)
    assert (series.train_end, series.validation_end) == (70, 90)


@pytest.mark.parametrize("rule, expected", [("ffill", [1.0, 1.0, 3.0, 4.0]), ("interpolate", [1.0, 2.0, 3.0, 4.0]),
                                            ("zero", [1.0, 0.0, 3.0, 4.0])])
def test_missing_values_are_filled_by_the_configured_rule(tmp_path, rule, expected):
    frame = pd.DataFrame({"y": [1.0, np.nan, 3.0, 4.0] * 5})
    config = TimeSeriesDataConfig(source="file", path=write_series(tmp_path, frame), target_column="y", fill=rule)
    np.testing.assert_allclose(load_time_series(config).target[:4], expected)


BAD = {
    "missing values without a rule": (pd.DataFrame({"t": range(20), "y": [1.0] * 5 + [None] + [2.0] * 14}),
                                      r"1 missing value\(s\) \(y: 1; first in 'y' at row 6\); set data.fill"),
    "timestamps out of order": (pd.DataFrame({"t": ["2024-01-01", "2024-01-03", "2024-01-02"] + [
        f"2024-02-{d:02d}" for d in range(1, 18)], "y": range(20)}), "timestamps out of order at row 3"),
    "duplicated timestamps": (pd.DataFrame({"t": ["2024-01-01", "2024-01-02", "2024-01-02"] + [
        f"2024-02-{d:02d}" for d in range(1, 18)], "y": range(20)}), "duplicated timestamp 2024-01-02"),
    "text in a number column": (pd.DataFrame({"t": range(20), "y": ["1"] * 19 + ["high"]}),
                                "column 'y' is not numeric \\(row 20: 'high'\\)"),
    # reliability review round 5, finding 17: these used to train to NaN
    "a value past float32": (pd.DataFrame({"t": range(20), "y": [1.0] * 7 + [1e39] + [1.0] * 12}),
                             "column 'y' holds 1 infinite or too large values \\(row 8: 1e\\+39"),
    "an infinite value": (pd.DataFrame({"t": range(20), "y": ["1"] * 3 + ["inf"] + ["1"] * 16}),
                          "column 'y' holds 1 infinite or too large values \\(row 4"),
}


@pytest.mark.parametrize("case", BAD)
def test_bad_series_are_clear_errors(tmp_path, case):
    frame, message = BAD[case]
    config = TimeSeriesDataConfig(source="file", path=write_series(tmp_path, frame), target_column="y",
                                  time_column="t" if "timestamp" in case else "")
    with pytest.raises(DataError, match=message):
        load_time_series(config)


def test_unknown_column_suggests_the_right_one(tmp_path):
    config = TimeSeriesDataConfig(source="file", path=write_series(tmp_path, hourly()), target_column="laod")
    with pytest.raises(DataError, match=r"no column 'laod' \(did you mean 'load'\?\)"):
        load_time_series(config)
