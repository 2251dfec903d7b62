"""A tagger's portable export (task `tag`, family `rnn_tagger`): the network (word, character and casing ids ->
per-word scores) as ONNX or LiteRT, and around it in NumPy what its SavedModel does in the graph
(`kpipe.preprocessing.tagging`, `kpipe.tasks.tag.signatures`): the words split with their character offsets, the
three id tables, the CRF's Viterbi decoding and forward-backward marginals (or each word's best softmax tag), and
the entities read as conlleval reads them. Pinned to the SavedModel's answers in tests/e2e/test_tag_portable.py."""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path
from typing import Sequence

import numpy as np

from kpipe.errors import KpipeError
from kpipe.portable.export_files import PREPROCESSING_FILE
from kpipe.portable.network import open_network
from kpipe.portable.runtime import PortableExport, inside
from kpipe.tokens import CASING_CLASSES

PAD, UNKNOWN = 0, 1  # as kpipe.preprocessing.tagging numbers them
WHITESPACE = frozenset("\t\n\f\r ")  # RE2's \s, which the graph's split drops
CASING_OTHER = CASING_CLASSES - 1  # the class after kpipe.preprocessing.tagging.CASING_PATTERNS's five


def is_word_character(c: str) -> bool:
    """Letters, marks, digits, "_", "@" and "#" (the graph's [\\p{L}\\p{M}\\p{N}_@#]): runs of them are words."""
    return c in "_@#" or unicodedata.category(c)[0] in "LMN"


def split_words(text: str) -> list[tuple[str, int, int]]:
    """(word, start, end) of `text`, offsets in characters, as `kpipe.preprocessing.tagging.split_words`: a run of
    word characters is a word, every other character but whitespace a word of its own."""
    words, begin = [], None
    for position, c in enumerate(text):
        if is_word_character(c):
            begin = position if begin is None else begin
            continue
        if begin is not None:
            words.append((text[begin:position], begin, position))
            begin = None
        if c not in WHITESPACE:
            words.append((c, position, position + 1))
    if begin is not None:
        words.append((text[begin:], begin, len(text)))
    return words


def casing_class(word: str) -> int:
    """`kpipe.preprocessing.tagging.casing_ids` for one word: the first of its patterns the word matches."""
    if not word:
        return PAD
    categories = [unicodedata.category(c) for c in word]
    if "0" <= word[0] <= "9" and all("0" <= c <= "9" or c in ".,:/-" for c in word):
        return 1  # numeric
    if any("0" <= c <= "9" for c in word):
        return 2  # holds a digit
    if "Lu" not in categories and "Ll" in categories:
        return 3  # all lower
    if "Ll" not in categories and "Lu" in categories:
        return 4  # all upper
    if categories[0] == "Lu":
        return 5  # initial upper
    return CASING_OTHER


class TaggerIds:
    """Sentences of words -> the network's {"words", "chars", "casing"} ids, as `TaggerInputs` computes them."""

    def __init__(self, words: list[str], chars: list[str], lowercase: bool, max_word_length: int):
        self.words = {w: i for i, w in enumerate(words, start=2)}
        self.chars = {c: i for i, c in enumerate(chars, start=2)}
        self.lowercase, self.max_word_length = lowercase, max_word_length

    def __call__(self, sentences: Sequence[Sequence[str]]) -> dict[str, np.ndarray]:
        batch, longest = len(sentences), max((len(s) for s in sentences), default=0)
        width = max([1] + [min(len(w), self.max_word_length) for s in sentences for w in s])
        word_ids = np.zeros((batch, longest), np.int32)
        char_ids = np.zeros((batch, longest, width), np.int32)
        casing = np.zeros((batch, longest), np.int32)
        for i, sentence in enumerate(sentences):
            for j, word in enumerate(sentence):
                key = word.lower() if self.lowercase else word
                word_ids[i, j] = self.words.get(key, UNKNOWN) if word else PAD
                char_ids[i, j, :min(len(word), width)] = [self.chars.get(c, UNKNOWN)
                                                          for c in word[:self.max_word_length]]
                casing[i, j] = casing_class(word)
        return {"words": word_ids, "chars": char_ids, "casing": casing}


def viterbi(emissions: np.ndarray, transitions: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """The best tag sequence of one sentence's emissions (words, tags) under the chain (`CRF.viterbi`)."""
    if not len(emissions):
        return np.zeros(0, np.int32)
    best, pointers = start + emissions[0], []
    for emission in emissions[1:]:
        scores = best[:, None] + transitions
        pointers.append(scores.argmax(axis=0))
        best = scores.max(axis=0) + emission
    path = [int((best + end).argmax())]
    for pointer in reversed(pointers):
        path.append(int(pointer[path[-1]]))
    return np.asarray(path[::-1], np.int32)


def _logsumexp(x: np.ndarray, axis: int) -> np.ndarray:
    top = x.max(axis=axis, keepdims=True)
    return np.squeeze(top, axis) + np.log(np.exp(x - top).sum(axis=axis))


def marginals(emissions: np.ndarray, transitions: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """(words, tags) each word's probability of each tag under the chain (forward-backward, `CRF.marginals`)."""
    n = len(emissions)
    if not n:
        return np.zeros((0, len(start)), np.float32)
    alpha, beta = np.zeros_like(emissions), np.zeros_like(emissions)
    alpha[0] = start + emissions[0]
    for t in range(1, n):
        alpha[t] = _logsumexp(alpha[t - 1][:, None] + transitions, axis=0) + emissions[t]
    beta[-1] = end
    for t in range(n - 2, -1, -1):
        beta[t] = _logsumexp(transitions + (emissions[t + 1] + beta[t + 1])[None, :], axis=1)
    scores = alpha + beta
    scores = np.exp(scores - scores.max(axis=1, keepdims=True))
    return (scores / scores.sum(axis=1, keepdims=True)).astype(np.float32)


def entities(tags: Sequence[str], scores: Sequence[float], offsets: Sequence[tuple[int, int]]) -> list[tuple]:
    """(label, start, end, score) of each entity in a sentence's IOB2 tags, as conlleval reads them: B- starts one,
    and so does an I- that continues nothing (O or another type before it); its score is its words' mean."""
    found, current = [], None
    for tag, score, (begin, finish) in zip(tags, scores, offsets):
        kind = tag.split("-", 1)[1] if "-" in tag else ""
        if current is not None and (not kind or tag.startswith("B-") or kind != current[0]):
            found.append(current)
            current = None
        if kind and current is None:
            current = [kind, begin, finish, [score]]
        elif kind:
            current[2] = finish
            current[3].append(score)
    if current is not None:
        found.append(current)
    return [(kind, begin, finish, float(np.mean(np.asarray(word_scores, np.float32)))) for kind, begin, finish,
            word_scores in found]


class PortableTagger(PortableExport):
    """Raw texts in, words, tags and entities out, as the SavedModel's `serving_default` answers; `tag_tokens` on
    words already split."""

    task, command = "tag", "kpipe tag"

    def __init__(self, folder: Path):
        super().__init__(folder)
        spec = json.loads((folder / PREPROCESSING_FILE).read_text(encoding="utf-8"))
        tables = json.loads(inside(folder, spec["tables"]).read_text(encoding="utf-8"))
        self.ids = TaggerIds(tables["words"], tables["chars"], spec["lowercase"], spec["max_word_length"])
        self.tag_names = json.loads(inside(folder, spec["tags"]).read_text(encoding="utf-8"))["tags"]
        self.crf = None
        if spec.get("crf"):
            with np.load(inside(folder, spec["crf"])) as chain:
                self.crf = tuple(chain[name].astype(np.float32) for name in ("transitions", "start", "end"))
        self.max_words = spec.get("max_words", 0)  # LiteRT: one sentence per call, padded to this many words
        self.network = open_network(inside(folder, spec["network"]), self.manifest["format"])

    def scores(self, sentences: Sequence[Sequence[str]]) -> np.ndarray:
        """The network's per-word scores (batch, longest, tags): the CRF's emissions or the softmax's.

        Raises:
            KpipeError: a sentence longer than a LiteRT network's words.
        """
        inputs = self.ids(sentences)
        if not inputs["words"].size:
            return np.zeros((*inputs["words"].shape, len(self.tag_names)), np.float32)
        if not self.max_words:
            return np.asarray(self.network.outputs(inputs)[0], np.float32)
        longest = inputs["words"].shape[1]
        if longest > self.max_words:
            raise KpipeError(f"a sentence of {longest} words is longer than this LiteRT export's {self.max_words} (its "
                             "recurrent loop has a fixed length); tag it with the ONNX export or the SavedModel")
        more_words, more_chars = self.max_words - longest, self.ids.max_word_length - inputs["chars"].shape[2]
        fixed = {"words": np.pad(inputs["words"], [(0, 0), (0, more_words)]),
                 "casing": np.pad(inputs["casing"], [(0, 0), (0, more_words)]),
                 "chars": np.pad(inputs["chars"], [(0, 0), (0, more_words), (0, more_chars)])}
        rows = [self.network.outputs({name: array[i:i + 1] for name, array in fixed.items()})[0][0]
                for i in range(len(sentences))]
        return np.asarray(rows, np.float32)[:, :longest]

    def tag_ids(self, sentences: Sequence[Sequence[str]]) -> list[tuple[np.ndarray, np.ndarray]]:
        """Each sentence's tag ids and their probabilities (the chain's marginals with a CRF)."""
        found = []
        for sentence, scores in zip(sentences, self.scores(sentences)):
            scores = scores[:len(sentence)]
            if self.crf is not None:
                ids, probabilities = viterbi(scores, *self.crf), marginals(scores, *self.crf)
            else:
                ids, probabilities = scores.argmax(axis=-1).astype(np.int32), scores
            found.append((ids, probabilities[np.arange(len(ids)), ids].astype(np.float32)))
        return found

    def tag_tokens(self, tokens: Sequence[Sequence[str]]) -> dict[str, np.ndarray]:
        """The SavedModel's `tag_tokens`: (batch, words) words (str or UTF-8 bytes), "" as padding -> {"tags" (UTF-8
        bytes, b"" on padding), "scores"}, both (batch, words)."""
        tokens = [[w.decode("utf-8", "replace") if isinstance(w, bytes) else w for w in row] for row in tokens]
        width = max((len(row) for row in tokens), default=0)
        # a sentence is as long as its words that are not "" (as the graph counts it: padding is trailing)
        sentences = [row[:sum(1 for w in row if w)] for row in tokens]
        tags, scores = np.full((len(tokens), width), b"", object), np.zeros((len(tokens), width), np.float32)
        for i, (row, (ids, probabilities)) in enumerate(zip(sentences, self.tag_ids(sentences))):
            tags[i, :len(ids)] = [self.tag_names[t].encode("utf-8") if w else b"" for w, t in zip(row, ids)]
            scores[i, :len(ids)] = probabilities
        return {"tags": tags, "scores": scores}

    def serve(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """The SavedModel's `serving_default` on raw texts: "words" and "tags" (batch, most words; b"" padding),
        and each text's entities: "entity_labels", "entity_texts" (b""), "entity_starts", "entity_ends" (character
        offsets, -1) and "entity_scores" (0), (batch, most entities)."""
        split = [split_words(text) for text in texts]
        sentences = [[word for word, _, _ in words] for words in split]
        tagged = self.tag_ids(sentences)
        found = [entities([self.tag_names[t] for t in ids], probabilities, [(a, b) for _, a, b in words])
                 for (ids, probabilities), words in zip(tagged, split)]
        width, most = max((len(s) for s in sentences), default=0), max((len(f) for f in found), default=0)
        out = {"words": np.full((len(texts), width), b"", object), "tags": np.full((len(texts), width), b"", object),
               "entity_labels": np.full((len(texts), most), b"", object),
               "entity_texts": np.full((len(texts), most), b"", object),
               "entity_starts": np.full((len(texts), most), -1, np.int32),
               "entity_ends": np.full((len(texts), most), -1, np.int32),
               "entity_scores": np.zeros((len(texts), most), np.float32)}
        for i, (text, sentence, (ids, _), spans) in enumerate(zip(texts, sentences, tagged, found)):
            out["words"][i, :len(sentence)] = [w.encode("utf-8") for w in sentence]
            out["tags"][i, :len(ids)] = [self.tag_names[t].encode("utf-8") for t in ids]
            for j, (label, begin, finish, score) in enumerate(spans):
                out["entity_labels"][i, j], out["entity_texts"][i, j] = label.encode(), text[begin:finish].encode()
                out["entity_starts"][i, j], out["entity_ends"][i, j], out["entity_scores"][i, j] = begin, finish, score
        return out
