"""Sampling names with a portable generator export (`kpipe export names-char --format onnx`), without TensorFlow.

The sampling loop runs here in NumPy, as the SavedModel's in-graph samplers do
(`kpipe.families.char_sampling.sample_next`), around the exported network: a char_rnn's one-step network
(`kpipe.families.char_rnn.step_network`: a character and the cells' states in, the next character's logits and
the new states out, and the initial states from the category) or a char_transformer's trained model, run on START,
the prefix and what was sampled so far at every step (causal: the logits at the last filled position are the
next character's). Each step draws among the `top_k` likeliest characters at `temperature`, never padding, START
or UNKNOWN.
Names end at END or at the export's maximum length. The draws come from NumPy's generator, so a seed gives the
same names here every time, but not the SavedModel's names (TensorFlow's stateless sampler); with `top_k=1` both
choose the likeliest character at every step and give the same names.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

from kpipe.errors import KpipeError, did_you_mean
from kpipe.portable.export_files import GENERATOR_FILE, PREPROCESSING_FILE
from kpipe.portable.network import open_network
from kpipe.portable.runtime import PortableExport, inside
from kpipe.tokens import CHARS

NEVER_SAMPLED = CHARS.never_emitted  # padding, START and UNKNOWN
# How each id renders in a name: the reserved ids as nothing (UNKNOWN as "?"), then the export's characters
SPECIAL_CHARS = tuple("?" if i == CHARS.unknown else "" for i in range(CHARS.count))
STATE_INPUT = re.compile(r"state_\d+_[hc]")  # a step network's state inputs (kpipe.families.char_rnn.step_network)


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
        fmt = self.manifest["format"]
        self.network = open_network(inside(folder, pre["network"]), fmt)
        self.stepped = pre["kind"] == "char_steps"  # one step of an RNN's cells per call, else the whole sequence
        self.start = open_network(inside(folder, pre["start"]), fmt) if pre.get("start") else None
        if self.stepped:  # its states, as the step network declares them: state_<layer>_<h or c>, h first
            found = {match.group(0): shape for name, shape in self.network.input_shapes().items()
                     if (match := STATE_INPUT.search(name))}
            self.states = sorted(found, key=lambda n: (int(n.split("_")[1]), n[-1] != "h"))
            self.sizes = [int(found[name][-1]) for name in self.states]
        self.ids = {ch: CHARS.count + i for i, ch in enumerate(self.spec["characters"])}
        self.chars = np.array([*SPECIAL_CHARS, *self.spec["characters"]], dtype=object)

    def generate(self, prefix: str = "", count: int = 10, temperature: float = 1.0, category: str = "",
                 top_k: int = 0, seed: int | None = None) -> list[str]:
        text = check_generate_arguments(self.spec, prefix=prefix, count=count, temperature=temperature,
                                        category=category, top_k=top_k)
        rng = np.random.default_rng(None if seed is None else seed % 2 ** 32)  # any int32, as the SavedModel takes
        categories = self.spec["categories"]
        category_id = categories.index(category) if category in categories else 0
        prefix_ids = [CHARS.start, *(self.ids[ch] for ch in text)]
        sample = (self._sample_stepped if self.stepped else self._sample_whole)
        sampled = sample(prefix_ids, count, category_id, lambda logits: sample_next(logits, temperature, top_k, rng))
        return [self._name(text, row) for row in sampled]

    def logits(self, chars: np.ndarray, category: np.ndarray) -> np.ndarray:
        """Next-character logits at every position of `chars` (batch, length) for `category` (batch,), as the
        trained model gives them (the stepped network run over the positions)."""
        chars, category = np.asarray(chars, np.int32), np.asarray(category, np.int32)
        if not self.stepped:
            return np.asarray(self.network({"chars": chars, "category": category}))
        states, found = self._start_states(category), []
        for position in range(chars.shape[1]):
            logits, states = self._step(chars[:, position], category, states)
            found.append(logits)
        return np.stack(found, axis=1)

    def _sample_whole(self, prefix_ids: list[int], count: int, category_id: int, draw) -> np.ndarray:
        """Each step runs the network on START, the prefix and the characters drawn so far (the transformer)."""
        buffer = np.zeros((count, self.length), np.int32)
        buffer[:, :len(prefix_ids)] = prefix_ids
        alive = np.ones(count, bool)
        for position in range(len(prefix_ids) - 1, self.spec["max_length"]):  # logits at `position`: the next one
            rows = np.flatnonzero(alive)
            # LiteRT's networks take the whole padded buffer; ONNX's any length (causal: a prefix will do)
            width = self.length if self.network.fmt == "litert" else position + 1
            logits = self.network({"chars": buffer[rows, :width],
                                   "category": np.full(len(rows), category_id, np.int32)})
            ids = draw(np.asarray(logits)[:, position])
            buffer[rows, position + 1] = ids
            alive[rows[ids == CHARS.end]] = False
            if not alive.any():
                break
        return buffer[:, len(prefix_ids):]

    def _sample_stepped(self, prefix_ids: list[int], count: int, category_id: int, draw) -> np.ndarray:
        """START and the prefix fed once (the same for every name), then one step per drawn character, for the
        names not ended yet."""
        category = np.full(1, category_id, np.int32)
        states = self._start_states(category)
        for char in prefix_ids:
            logits, states = self._step(np.full(1, char, np.int32), category, states)
        logits, states = np.repeat(logits, count, axis=0), [np.repeat(s, count, axis=0) for s in states]
        category = np.full(count, category_id, np.int32)
        steps = self.spec["max_length"] - (len(prefix_ids) - 1)
        sampled, rows = np.zeros((count, steps), np.int32), np.arange(count)
        for t in range(steps):
            ids = draw(logits)
            sampled[rows, t] = ids
            going = ids != CHARS.end
            rows, ids, states = rows[going], ids[going], [s[going] for s in states]
            if not len(rows) or t + 1 == steps:
                break
            logits, states = self._step(ids, category[rows], states)
        return sampled

    def _start_states(self, category: np.ndarray) -> list[np.ndarray]:
        states = [np.zeros((len(category), size), np.float32) for size in self.sizes]
        if self.start is not None:  # the first layer's states from the category (h, then c for an LSTM)
            for i, value in enumerate(self.start.outputs({"category": category})):
                states[i] = np.asarray(value, np.float32)
        return states

    def _step(self, chars: np.ndarray, category: np.ndarray, states: list[np.ndarray]):
        found = self.network.outputs({"char": chars, "category": category, **dict(zip(self.states, states))})
        return np.asarray(found[0]), [np.asarray(s, np.float32) for s in found[1:]]

    def _name(self, text: str, sampled: np.ndarray) -> str:
        """The prefix and the sampled characters up to END, capitalized as the SavedModel does for a model
        trained on lower-cased names."""
        ends = np.flatnonzero(sampled == CHARS.end)
        name = text + "".join(self.chars[sampled[:ends[0] if len(ends) else len(sampled)]])
        if self.spec["lowercase"] and name:
            first = name[0].upper()
            name = (first if len(first) == 1 else name[0]) + name[1:]
        return name
