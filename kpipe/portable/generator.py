"""Sampling names with a portable generator export (`kpipe export names-char --format onnx`), without TensorFlow.

The exported network is the trained model itself: (chars (batch, length) int32, category (batch,) int32) ->
next-character logits at every position. The sampling loop runs here in NumPy, as the SavedModel's in-graph
samplers do (`kpipe.families.char_rnn.model.sample_next`): each step feeds START, the prefix and what was sampled
so far, reads the logits at the last filled position (the models are causal: later positions cannot change
them), and draws among the `top_k` likeliest characters at `temperature`, never padding, START or UNKNOWN.
Names end at END or at the export's maximum length. The draws come from NumPy's generator, so a seed gives the
same names here every time, but not the SavedModel's names (TensorFlow's stateless sampler); with `top_k=1` both
choose the likeliest character at every step and give the same names.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from kpipe.errors import KpipeError, did_you_mean
from kpipe.portable.runtime import PREPROCESSING_FILE, Network, PortableExport
from kpipe.tokens import CHARS

GENERATOR_FILE = "generator.json"  # beside a generator's SavedModel and portable export: characters, categories, ...
NEVER_SAMPLED = (CHARS.pad, CHARS.start, CHARS.unknown)


def check_generate_arguments(spec: dict, *, prefix: str, count: int, temperature: float, category: str,
                             top_k: int) -> str:
    """The prefix as the model reads it (lower-cased if it was trained so), every argument checked against the
    export's `generator.json` (`spec`: characters, categories, max_length, lowercase).

    Raises:
        KpipeError: count or temperature not positive, negative top_k, an unknown category (lists the known
            ones), prefix characters the model never saw (names them), or a prefix as long as a name can be.
    """
    if count <= 0:
        raise KpipeError(f"count must be > 0. Received: count={count}")
    if not temperature > 0:
        raise KpipeError(f"temperature must be > 0. Received: temperature={temperature}")
    if top_k < 0:
        raise KpipeError(f"top_k must be >= 0 (0 = no top-k). Received: top_k={top_k}")
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
    return text


def sample_next(logits: np.ndarray, temperature: float, top_k: int, rng: np.random.Generator) -> np.ndarray:
    """One id per row of `logits` (rows, vocabulary): softmax of logits / temperature over the `top_k` largest
    (0: all; ties with the k-th kept, as `tf.math.top_k`'s threshold does), never an id of NEVER_SAMPLED."""
    scaled = np.asarray(logits, np.float64) / temperature
    scaled[:, NEVER_SAMPLED] = -np.inf
    if 0 < top_k < scaled.shape[1]:
        kth = np.sort(scaled, axis=1)[:, -top_k][:, None]
        scaled = np.where(scaled < kth, -np.inf, scaled)
    weights = np.exp(scaled - scaled.max(axis=1, keepdims=True))
    cumulative = np.cumsum(weights, axis=1)
    draws = rng.random((len(scaled), 1)) * cumulative[:, -1:]
    return np.minimum((cumulative <= draws).sum(axis=1), scaled.shape[1] - 1).astype(np.int32)


class PortableGenerator(PortableExport):
    """A name generator's portable export: `generate(prefix, count, temperature, category, top_k, seed)` -> names,
    as the SavedModel's `generate` signature answers."""

    task, command = "generate", "kpipe generate"

    def __init__(self, folder: Path):
        super().__init__(folder)
        pre = json.loads((folder / PREPROCESSING_FILE).read_text(encoding="utf-8"))
        self.spec = json.loads((folder / GENERATOR_FILE).read_text(encoding="utf-8"))
        self.length = int(pre["sequence_length"])  # START and up to max_length characters
        self.network = Network(folder / pre["network"], self.manifest["format"])
        self.ids = {ch: CHARS.count + i for i, ch in enumerate(self.spec["characters"])}
        self.chars = np.array(["", "", "", "?", *self.spec["characters"]], dtype=object)

    def generate(self, prefix: str = "", count: int = 10, temperature: float = 1.0, category: str = "",
                 top_k: int = 0, seed: int | None = None) -> list[str]:
        text = check_generate_arguments(self.spec, prefix=prefix, count=count, temperature=temperature,
                                        category=category, top_k=top_k)
        rng = np.random.default_rng(None if seed is None else seed % 2 ** 32)  # any int32, as the SavedModel takes
        categories = self.spec["categories"]
        category_id = categories.index(category) if category in categories else 0
        buffer = np.zeros((count, self.length), np.int32)
        buffer[:, 0] = CHARS.start
        buffer[:, 1:1 + len(text)] = [self.ids[ch] for ch in text]
        alive = np.ones(count, bool)
        for position in range(len(text), self.spec["max_length"]):  # logits at `position` give character position+1
            rows = np.flatnonzero(alive)
            # LiteRT's recurrent networks take the whole padded buffer; ONNX's any length (causal: a prefix will do)
            width = self.length if self.network.fmt == "litert" else position + 1
            logits = self.network({"chars": buffer[rows, :width],
                                   "category": np.full(len(rows), category_id, np.int32)})
            ids = sample_next(np.asarray(logits)[:, position], temperature, top_k, rng)
            buffer[rows, position + 1] = ids
            alive[rows[ids == CHARS.end]] = False
            if not alive.any():
                break
        return [self._name(text, row[len(text) + 1:]) for row in buffer]

    def _name(self, text: str, sampled: np.ndarray) -> str:
        """The prefix and the sampled characters up to END, capitalized as the SavedModel does for a model
        trained on lower-cased names."""
        ends = np.flatnonzero(sampled == CHARS.end)
        name = text + "".join(self.chars[sampled[:ends[0] if len(ends) else len(sampled)]])
        if self.spec["lowercase"] and name:
            first = name[0].upper()
            name = (first if len(first) == 1 else name[0]) + name[1:]
        return name
