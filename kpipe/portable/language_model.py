"""A language model's portable export (task `lm`): the model's decoder as a one-step network
(`kpipe.families.lm_step_network`: a token, its position and the cache in, the next token's logits and the new cache
out: `gpt`'s key/value caches or linear attention's sums, `rnn_lm`'s cell states) in onnxruntime or LiteRT, and
around it here what the SavedModel's `generate` does in the graph: the byte-level BPE (Hugging Face's `tokenizers`,
the tokenizer kpipe learns with), the prompt read after the end-of-text token that starts every document, then one
token a step until end-of-text or `max_new_tokens`, greedy at temperature 0 or drawn among the `top_k` likeliest
tokens within `top_p` of the probability. NumPy draws, so a seed repeats here but gives other samples than the
SavedModel's (TensorFlow's sampler); greedy continuations are the SavedModel's (tested). `score` reads texts as the
SavedModel's does (windows of the context every `stride` tokens, each starting afresh); beam search stays with the
SavedModel."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Sequence

import numpy as np

from kpipe.errors import KpipeError
from kpipe.portable.export_files import PREPROCESSING_FILE
from kpipe.portable.byte_bpe import fast_tokenizer
from kpipe.portable.network import open_network
from kpipe.portable.runtime import PortableExport, inside

END_OF_TEXT = "<|endoftext|>"  # as kpipe.preprocessing.byte_bpe names it: starts every document, ends every text
DEFAULT_NEW_TOKENS = 64  # the SavedModel's default (kpipe.tasks.lm.signatures)
STATE_INPUT = re.compile(r"state_(\d+)")  # the step network's cache inputs (kpipe.families.lm_step_network)


def next_token(logits: np.ndarray, temperature: float, top_k: int, top_p: float, rng: np.random.Generator) -> int:
    """The next token from one position's logits: the likeliest at temperature 0; else a draw from the softmax at
    `temperature` over the `top_k` likeliest tokens (0: all) whose cumulative probability before them is below
    `top_p` (the likeliest is always kept)."""
    if temperature == 0:
        return int(np.argmax(logits))
    scaled = logits.astype(np.float64) / temperature
    probabilities = np.exp(scaled - scaled.max())
    probabilities /= probabilities.sum()
    order = np.argsort(-probabilities, kind="stable")[:top_k or len(probabilities)]
    kept = probabilities[order]
    inside_p = np.cumsum(kept) - kept < top_p
    order, kept = order[inside_p], kept[inside_p]
    return int(rng.choice(order, p=kept / kept.sum()))


class PortableLanguageModel(PortableExport):
    """Prompts in, their continuations out, as the SavedModel's `serving_default` and `generate` answer."""

    task, command = "lm", "kpipe generate"

    def __init__(self, folder: Path):
        super().__init__(folder)
        spec = json.loads((folder / PREPROCESSING_FILE).read_text(encoding="utf-8"))
        saved = json.loads(inside(folder, spec["tokenizer"]).read_text(encoding="utf-8"))
        self.tokenizer = fast_tokenizer(saved["vocabulary"], saved["merges"])
        self.end_of_text = saved["vocabulary"][END_OF_TEXT]
        settings = json.loads(inside(folder, spec["settings"]).read_text(encoding="utf-8"))
        self.sequence_length, self.vocabulary_size = settings["sequence_length"], settings["vocabulary_size"]
        self.stride = settings.get("stride", self.sequence_length)  # exports before strided scoring: consecutive
        self.network = open_network(inside(folder, spec["network"]), self.manifest["format"])
        # the decoder's cache as the network's state_N inputs (in its outputs' order), with their shapes
        found = {int(STATE_INPUT.search(name).group(1)): shape for name, shape in self.network.input_shapes().items()
                 if STATE_INPUT.search(name)}
        self.states = [(f"state_{n}", tuple(found[n][1:])) for n in sorted(found)]

    def fresh_states(self) -> dict[str, np.ndarray]:
        """The decoder's empty cache for one text."""
        return {name: np.zeros((1, *shape), np.float32) for name, shape in self.states}

    def step(self, token: int, position: int, states: dict[str, np.ndarray]) -> tuple[np.ndarray, dict]:
        """The logits after `token` at `position` and the states it leaves, for one text."""
        logits, *new = self.network.outputs({"token": np.array([token], np.int32),
                                             "index": np.array([position], np.int32), **states})
        return np.asarray(logits, np.float32)[0], {name: array for (name, _), array in zip(self.states, new)}

    def continue_text(self, ids: list[int], new_tokens: int, temperature: float, top_k: int, top_p: float,
                      rng: np.random.Generator) -> list[int]:
        """Up to `new_tokens` tokens after `ids` (the start token and the prompt's), stopping before end-of-text."""
        states = self.fresh_states()
        for position, token in enumerate(ids):
            logits, states = self.step(token, position, states)
        written = []
        while len(written) < new_tokens:
            token = next_token(logits, temperature, top_k, top_p, rng)
            if token == self.end_of_text:
                break
            written.append(token)
            logits, states = self.step(token, len(ids) + len(written) - 1, states)
        return written

    def generate(self, prompts: Sequence[str], max_new_tokens: int = -1, temperature: float = 0.0, top_k: int = 0,
                 top_p: float = 1.0, seed: int = -1) -> dict[str, np.ndarray]:
        """{"text": each prompt's continuation (UTF-8 bytes)}; `max_new_tokens` -1 writes as many as the context
        leaves, `DEFAULT_NEW_TOKENS` at most; `seed` -1 draws afresh.

        Raises:
            KpipeError: a setting out of its range, or a prompt (plus `max_new_tokens`) longer than the context.
        """
        if not temperature >= 0:
            raise KpipeError(f"temperature must be >= 0 (0 = greedy). Received: {temperature}")
        if not 0 < top_p <= 1:
            raise KpipeError(f"top_p must be in (0, 1]. Received: {top_p}")
        if not 0 <= top_k <= self.vocabulary_size:
            raise KpipeError(f"top_k must be >= 0 (0 = every token) and at most the vocabulary's "
                             f"{self.vocabulary_size}. Received: {top_k}")
        if max_new_tokens == 0 or max_new_tokens < -1:
            raise KpipeError(f"max_new_tokens must be > 0. Received: {max_new_tokens}")
        ids = [[self.end_of_text, *encoding.ids] for encoding in self.tokenizer.encode_batch(list(prompts))]
        longest = max([1] + [len(row) for row in ids])
        if longest >= self.sequence_length:
            raise KpipeError(f"the prompt is longer than the model's context of {self.sequence_length} tokens; "
                             "shorten it")
        if max_new_tokens < 0:
            max_new_tokens = min(DEFAULT_NEW_TOKENS, self.sequence_length - longest)
        if longest + max_new_tokens > self.sequence_length:
            raise KpipeError(f"the prompt's tokens plus max_new_tokens exceed the model's context of "
                             f"{self.sequence_length} tokens")
        rng = np.random.default_rng(seed if seed >= 0 else None)
        texts = [self.tokenizer.decode(self.continue_text(row, max_new_tokens, temperature, top_k, top_p, rng),
                                       skip_special_tokens=False) for row in ids]
        return {"text": np.array([text.encode("utf-8") for text in texts], dtype=object).reshape(len(texts))}

    def score(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """The SavedModel's `score`: each text's "log_likelihood" (total, nats, its tokens read after the start
        token), "words" (whitespace-separated), "characters" and "tokens"; a text longer than the context is read in
        windows of `sequence_length` tokens every `stride` tokens, each from fresh states, each token scored in the
        first window that holds it."""
        found = {"log_likelihood": [], "words": [], "characters": [], "tokens": []}
        window, stride = self.sequence_length, self.stride
        for text, encoding in zip(texts, self.tokenizer.encode_batch(list(texts))):
            ids, total = [self.end_of_text, *encoding.ids], 0.0
            inputs, targets = ids[:-1], ids[1:]
            for start in range(0, max(len(inputs) - window, 0) + stride, stride):
                first_new = 0 if start == 0 else window - stride  # the tokens before it were scored in earlier windows
                states = self.fresh_states()
                for position, token in enumerate(inputs[start:start + window]):
                    logits, states = self.step(token, position, states)
                    if position >= first_new:
                        shifted = logits.astype(np.float64) - logits.max()
                        total += float(shifted[targets[start + position]] - np.log(np.exp(shifted).sum()))
            found["log_likelihood"].append(total)
            found["words"].append(len(text.split()))
            found["characters"].append(len(text))
            found["tokens"].append(len(ids) - 1)
        return {"log_likelihood": np.asarray(found["log_likelihood"], np.float32),
                **{key: np.asarray(found[key], np.int32) for key in ("words", "characters", "tokens")}}
