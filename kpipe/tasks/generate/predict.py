"""Generating names with an exported model. Imports no training code (and no TensorFlow for a portable export).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from kpipe.portable.export_files import GENERATOR_FILE
from kpipe.exports.open import open_export
from kpipe.portable.generator import PortableGenerator, check_generate_arguments
from kpipe.portable.runtime import is_portable


def generate_names(model: str | Path, *, prefix: str = "", count: int = 10, temperature: float = 1.0,
                   category: str = "", top_k: int = 0, seed: int | None = None,
                   export_dir: str | Path = "saved_models") -> list[str]:
    """Sample names from an exported generator (a SavedModel, or its ONNX or LiteRT export), checking the
    arguments first (`check_generate_arguments` says what it refuses)."""
    if is_portable(model):  # an ONNX or LiteRT export: sampled in NumPy, without TensorFlow
        return PortableGenerator.open(model).generate(prefix, count, temperature, category, top_k, seed)
    path = open_export(model, task="generate", command="kpipe generate", export_dir=export_dir, load="nothing").path
    spec = json.loads((path / GENERATOR_FILE).read_text(encoding="utf-8"))
    check_generate_arguments(spec, prefix=prefix, count=count, temperature=temperature, category=category,
                             top_k=top_k)  # before the SavedModel loads
    import tensorflow as tf

    from kpipe.exports.saved_model import load_saved_model

    seed = np.random.randint(2 ** 31 - 1) if seed is None else seed
    loaded = load_saved_model(path)  # kept while it runs: its variables live as long as it does
    out = loaded.generate(prefix=tf.constant(prefix), count=tf.constant(count, tf.int32),
                          temperature=tf.constant(temperature, tf.float32), category=tf.constant(category),
                          top_k=tf.constant(top_k, tf.int32), seed=tf.constant(seed, tf.int32))
    return [n.decode("utf-8") for n in out["names"].numpy()]
