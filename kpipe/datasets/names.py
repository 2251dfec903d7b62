"""Names for character-level generation: real first names by country, or a file of names.

Sources (`data.source`):
    embedded  "first-names-by-country": the 48,528 first names of gender-guesser's `nam_dict.txt`
              (Jörg Michael's name dictionary, 54 countries/regions), read from the installed package.
              One example per (name, country) where the name is in use in that country.
    file      a text file with one name per line, optionally followed by a tab and a category; or a
              CSV/TSV/Parquet table with a name column and an optional category column.

The split is by name (a hash of the name), so every spelling lives in one split only, whatever its
categories, and the same file always gives the same split.
"""

from __future__ import annotations

import dataclasses
import logging
import unicodedata
from pathlib import Path
from typing import TYPE_CHECKING

from kpipe.config.constraints import group_default, open_fraction
from kpipe.datasets import embedded, files
from kpipe.datasets.source import DataSourceConfig
from kpipe.datasets.split_settings import SplitSettings
from kpipe.datasets.embedded import package_dir
from kpipe.datasets.splits import split_by_first_item
from kpipe.errors import DataError, did_you_mean

if TYPE_CHECKING:
    import pandas as pd

log = logging.getLogger(__name__)


# gender_guesser.detector.Detector.COUNTRIES: column i (from character 30) of nam_dict.txt is country i.
NAM_DICT_COUNTRIES = """great_britain ireland usa italy malta portugal spain france belgium luxembourg
    the_netherlands east_frisia germany austria swiss iceland denmark norway sweden finland estonia latvia
    lithuania poland czech_republic slovakia hungary romania bulgaria bosniaand croatia kosovo macedonia
    montenegro serbia slovenia albania greece russia belarus moldova ukraine armenia azerbaijan georgia
    the_stans turkey arabia israel china india japan korea vietnam other_countries""".split()


@dataclasses.dataclass(frozen=True, kw_only=True)
class NamesDataConfig(SplitSettings, DataSourceConfig):
    """Where names come from, which categories to keep, and how they are split.

    Args:
        source: "embedded" or "file".
        name: embedded dataset ("first-names-by-country").
        path: a .txt (name[TAB category] per line) or CSV/TSV/Parquet file (file source).
        name_column, category_column: columns of a table ("" category = no categories).
        categories: keep only these categories (e.g. ["italy", "france"]); [] = all.
        limit: at most this many examples (0 = all): the first in the file's order after a seeded shuffle.
        validation_fraction, test_fraction: shares of the distinct names held out.
        seed: salts the name hash that makes the split.
        encoding: text encoding of files.
    """

    name: str = "first-names-by-country"
    name_column: str = "name"
    category_column: str = ""
    categories: tuple[str, ...] = ()
    validation_fraction: float = group_default(SplitSettings, "validation_fraction", 0.1, open_fraction())
    test_fraction: float = group_default(SplitSettings, "test_fraction", 0.1, open_fraction())


@dataclasses.dataclass(frozen=True)
class NameSplits:
    """(name, category) examples per split; category is "" when the data has none."""

    train: list[tuple[str, str]]
    validation: list[tuple[str, str]]
    test: list[tuple[str, str]]
    categories: list[str]  # sorted; [] when uncategorised

    def sizes(self) -> dict[str, int]:
        return {"train": len(self.train), "validation": len(self.validation), "test": len(self.test)}


# === Sources ===

def read_nam_dict() -> list[tuple[str, str]]:
    """(name, country) pairs from gender-guesser's nam_dict.txt: a name counts for a country when its
    frequency digit there is set. '+' joins parts of a name ("Jean+Pierre"); we write it as '-'."""
    folder = package_dir("gender_guesser", "'kpipe[data]' (or: pip install gender-guesser)")
    pairs = []
    with open(folder / "data" / "nam_dict.txt", encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\r\n")
            if not line or line[0] in "#=":
                continue
            name = line[3:29].strip().replace("+", "-")
            for country, mark in zip(NAM_DICT_COUNTRIES, line[30:-1]):
                if mark.strip():
                    pairs.append((name, country))
    return pairs


def read_names_countries() -> pd.DataFrame:
    """Each first name of nam_dict.txt once, with every country/region where it is in use: `text` (the
    name), `label` (its countries joined by "|") and `split_key` (the name, so that the split is by name,
    as `names-char` splits)."""
    import pandas as pd

    countries: dict[str, set[str]] = {}
    for name, country in read_nam_dict():
        countries.setdefault(name, set()).add(country)
    names = sorted(countries)
    return pd.DataFrame({"text": names, "label": ["|".join(sorted(countries[n])) for n in names],
                         "split_key": names})


def _read_file(config: NamesDataConfig) -> list[tuple[str, str]]:
    path = Path(config.path)
    if path.suffix.lower() == ".txt":
        pairs = []
        for line in files.read_text(path, encoding=config.encoding).splitlines():
            name, _, category = line.partition("\t")
            if name.strip():
                pairs.append((name.strip(), category.strip()))
        return pairs
    frame = files.read_table(path, encoding=config.encoding)
    for column in (config.name_column, config.category_column):
        if column and column not in frame.columns:
            raise DataError(f"{path} has no column '{column}'{did_you_mean(column, map(str, frame.columns))}; "
                            f"columns: {', '.join(map(str, frame.columns))}")
    categories = frame[config.category_column].astype(str) if config.category_column else [""] * len(frame)
    return [(str(n).strip(), str(c).strip()) for n, c in zip(frame[config.name_column], categories)
            if str(n).strip()]


# === Splitting ===

def load_names(config: NamesDataConfig) -> NameSplits:
    """Read, filter and split names as `config` says.

    Raises:
        DataError: unknown embedded name or category, missing file or column, no names left.
    """
    if config.source == "embedded":
        pairs = embedded.read(config.name, "names")
    else:
        pairs = _read_file(config)
    pairs = [(unicodedata.normalize("NFC", n), c) for n, c in pairs]
    known = sorted({c for _, c in pairs if c})
    if config.categories:
        unknown = [c for c in config.categories if c not in known]
        if unknown:
            raise DataError(f"unknown categor{'y' if len(unknown) == 1 else 'ies'} {', '.join(unknown)}"
                            f"{did_you_mean(unknown[0], known)}; known: {', '.join(known)}")
        pairs = [(n, c) for n, c in pairs if c in config.categories]
    pairs = list(dict.fromkeys(pairs))  # one example per (name, category)
    if config.limit and len(pairs) > config.limit:
        import random

        pairs = random.Random(config.seed).sample(pairs, config.limit)
    if not pairs:
        raise DataError(f"{config.describe()} has no names")
    splits = split_by_first_item(pairs, seed=config.seed, validation_fraction=config.validation_fraction,
                                 test_fraction=config.test_fraction, noun="names", source=config.describe())
    categories = sorted({c for _, c in pairs if c}) if any(c for _, c in pairs) else []
    result = NameSplits(splits["train"], splits["validation"], splits["test"], categories)
    log.info("Names %s: %s examples, %d categories", config.describe(), result.sizes(), len(categories))
    return result
