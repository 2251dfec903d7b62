"""Translating with an exported model. Imports no training code.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import tensorflow as tf

from kpipe.exports.open import call_in_batches, open_export


def translate_texts(model: str | Path, texts: list[str], *, export_dir: str | Path = "saved_models",
                    on_batch: Callable[[int], object] | None = None) -> list[str]:
    """Decode `texts` with an exported sequence-to-sequence model; `on_batch(n)` after each batch of n.

    Raises:
        KpipeError: the export is not a sequence-to-sequence model.
    """
    loaded = open_export(model, task="translate", command="kpipe translate", export_dir=export_dir).loaded
    batches = call_in_batches(lambda batch: loaded.translate(tf.constant(batch))["output"].numpy(), texts,
                              on_batch=on_batch)
    return [o.decode("utf-8") for batch in batches for o in batch]
