"""Text classification examples from TensorFlow Datasets, failing fast when offline.

`tfds.load` on a machine without internet retries its downloads for minutes. We first look for
the prepared data under `data_dir`; only if it is absent do we download, and only after a quick
check (a few seconds) that the download host can be reached at all.
"""

from __future__ import annotations

import concurrent.futures
import logging
import socket
from typing import TYPE_CHECKING

from kpipe.errors import DataError

if TYPE_CHECKING:
    import pandas as pd  # imported where used: it takes half a second, and parsing a config needs none

log = logging.getLogger(__name__)

# TFDS first tries its own mirror on Google Cloud Storage; if that host is unreachable the
# original URLs (e.g. ai.stanford.edu for IMDB) will be too, on the machines we care about.
PROBE_HOST = ("storage.googleapis.com", 443)


def can_reach(host: tuple[str, int] = PROBE_HOST, timeout: float = 3.0) -> bool:
    """True if a TCP connection to `host` opens within `timeout` seconds (DNS included)."""
    def connect() -> bool:
        with socket.create_connection(host, timeout=timeout):
            return True

    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
    try:
        return pool.submit(connect).result(timeout=timeout + 1)
    except (OSError, concurrent.futures.TimeoutError):
        return False
    finally:
        pool.shutdown(wait=False)


def read_tfds_text(name: str, *, data_dir: str = "", limit: int = 0) -> pd.DataFrame:
    """Read a supervised TFDS text dataset as `text`, `label` and `split` columns.

    The source's own `train` and `test` splits are kept in the `split` column; label ids are
    replaced by the dataset's class names (e.g. IMDB's "neg"/"pos").

    Args:
        name: a TFDS name such as "imdb_reviews" (optionally with config/version).
        data_dir: where TFDS keeps prepared data ("" = TFDS's default, ~/tensorflow_datasets).
        limit: read at most this many examples per split (0 = all).

    Raises:
        DataError: unknown name, not a (text, label) dataset, or absent and not downloadable.
    """
    import pandas as pd
    import tensorflow_datasets as tfds

    try:
        builder = tfds.builder(name, data_dir=data_dir or None)
    except (tfds.core.registered.DatasetNotFoundError, ValueError) as error:
        raise DataError(f"unknown TFDS dataset '{name}': {str(error).splitlines()[0]}") from None
    keys = builder.info.supervised_keys
    if not keys or len(keys) != 2:
        raise DataError(f"TFDS dataset '{name}' has no (text, label) supervised keys; "
                        "export it to CSV and use --data PATH.csv instead")
    text_key, label_key = keys
    if not builder.is_prepared():
        if not can_reach():
            raise DataError(
                f"TFDS dataset '{name}' is not in {builder.data_dir} and the internet cannot be reached to "
                f"download it; on a machine with internet run `tfds build {name}` and copy "
                f"~/tensorflow_datasets here, or point --data at a CSV/Parquet file or an aclImdb-style folder")
        log.info("Downloading and preparing TFDS dataset %s into %s", name, builder.data_dir)
        builder.download_and_prepare()

    label_names = builder.info.features[label_key].names
    frames = []
    known_splits = builder.info.splits  # empty under tfds.testing.mock_data
    for split in [s for s in ("train", "test") if not known_splits or s in known_splits]:
        ds = builder.as_dataset(split=split, as_supervised=False)
        if limit:
            ds = ds.take(limit)
        texts, labels = [], []
        for example in tfds.as_numpy(ds):
            texts.append(example[text_key].decode("utf-8"))
            labels.append(label_names[int(example[label_key])])
        frames.append(pd.DataFrame({"text": texts, "label": labels, "split": split}))
    return pd.concat(frames, ignore_index=True)
