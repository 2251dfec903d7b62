"""Generating names with an exported model. Imports no training code.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import tensorflow as tf

from kpipe.config.strict import did_you_mean
from kpipe.errors import KpipeError
from kpipe.exports.open import open_export
from kpipe.tasks.generate import GENERATOR_FILE


def generate_names(model: str | Path, *, prefix: str = "", count: int = 10, temperature: float = 1.0,
                   category: str = "", top_k: int = 0, seed: int | None = None,
                   export_dir: str | Path = "saved_models") -> list[str]:
    """Sample names from an exported generator, checking the arguments first.

    Raises:
        KpipeError: count or temperature not positive, negative top_k, an unknown category (lists the
            known ones), or prefix characters the model never saw (names them).
    """
    if count <= 0:
        raise KpipeError(f"count must be > 0. Received: count={count}")
    if not temperature > 0:
        raise KpipeError(f"temperature must be > 0. Received: temperature={temperature}")
    if top_k < 0:
        raise KpipeError(f"top_k must be >= 0 (0 = no top-k). Received: top_k={top_k}")
    opened = open_export(model, task="generate", command="kpipe generate", export_dir=export_dir)
    path = opened.path
    spec_file = path / GENERATOR_FILE
    spec = json.loads(spec_file.read_text(encoding="utf-8"))
    categories = spec["categories"]
    if category and category not in categories:
        known = ", ".join(categories) if categories else "none (this model has no categories)"
        raise KpipeError(f"unknown category '{category}'{did_you_mean(category, categories)}; known: {known}")
    text = prefix.lower() if spec["lowercase"] else prefix
    unknown = sorted({ch for ch in text if ch not in set(spec["characters"])})
    if unknown:
        raise KpipeError(f"the prefix {prefix!r} has character(s) this model never saw: "
                         f"{', '.join(repr(ch) for ch in unknown)}")
    if len(text) >= spec["max_length"]:
        raise KpipeError(f"the prefix is {len(text)} characters; this model generates names up to "
                         f"{spec['max_length']}")
    out = opened.loaded.generate(prefix=tf.constant(prefix), count=tf.constant(count, tf.int32),
                          temperature=tf.constant(temperature, tf.float32), category=tf.constant(category),
                          top_k=tf.constant(top_k, tf.int32),
                          seed=tf.constant(np.random.randint(2 ** 31 - 1) if seed is None else seed, tf.int32))
    return [n.decode("utf-8") for n in out["names"].numpy()]
