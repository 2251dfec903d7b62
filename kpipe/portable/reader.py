"""A reader's portable export (task `answer`): the encoder as ONNX or LiteRT, and around it in NumPy what its
SavedModel does in the graph (`kpipe.preprocessing.answer_windows`, `kpipe.tasks.answer.signatures`): word pieces with
their character offsets in the raw context, the overlapping windows, and the decoding (in each window a softmax over
[CLS] and the context's pieces, the best start <= end pair within `max_answer_tokens`, the best window's span).
Pinned to the SavedModel's answers in tests/e2e/test_answer_end_to_end.py."""

from __future__ import annotations

import json
import os
import unicodedata
from pathlib import Path
from typing import Sequence

import numpy as np

from kpipe.portable.export_files import PREPROCESSING_FILE
from kpipe.portable.network import open_network
from kpipe.portable.runtime import PortableExport, inside
from kpipe.portable.wordpiece import WordPieceIds, casefold, is_cjk, is_punctuation, is_whitespace

WINDOW_CHUNK = 64  # windows per network call (the SavedModel's chunk): bounded memory for long contexts
N_BEST_MOST = 20  # the largest k of n_best, here and in the SavedModel's signature


class OffsetPieces(WordPieceIds):
    """keras-hub's WordPiece ids of a text with each piece's character offsets [start, end) in the raw text: the
    raw text is split as the tokenizer splits, each word normalised as it does; a word whose normalised form
    differs in length (characters or bytes) gives each of its pieces the whole word's span (as the graph does)."""

    def raw_words(self, text: str) -> list[tuple[str, int, int]]:
        words, begin, position = [], None, 0
        while position < len(text):
            special = next((s for s in self.special if text.startswith(s, position)), None)
            c = text[position]
            if special or is_whitespace(c) or is_punctuation(c) or (self.split_on_cjk and is_cjk(c)):
                if begin is not None:
                    words.append((text[begin:position], begin, position))
                    begin = None
                if special:
                    words.append((special, position, position + len(special)))
                    position += len(special)
                    continue
                if not is_whitespace(c):
                    words.append((c, position, position + 1))
            elif begin is None:
                begin = position
            position += 1
        if begin is not None:
            words.append((text[begin:], begin, len(text)))
        return words

    def normalize(self, word: str) -> str:
        if word in self.special:
            return word
        if self.strip_accents:
            word = "".join(c for c in unicodedata.normalize("NFD", word) if unicodedata.category(c) != "Mn")
        return casefold(word) if self.lowercase else word

    def with_offsets(self, text: str) -> tuple[list[int], list[int], list[int]]:
        ids, starts, ends = [], [], []
        for raw, begin, end in self.raw_words(text):
            word = self.normalize(raw)
            same = len(word) == len(raw) and len(word.encode("utf-8")) == len(raw.encode("utf-8"))
            for piece, a, b in self.spans(word):
                ids.append(piece)
                starts.append(begin + a if same else begin)
                ends.append(begin + b if same else end)
        return ids, starts, ends


class PortableReader(PortableExport):
    """Questions and contexts in, the answer span out (answer, start, end, score), as the SavedModel's
    `serving_default` answers."""

    task, command = "answer", "kpipe answer"

    def __init__(self, folder: Path):
        super().__init__(folder)
        spec = json.loads((folder / PREPROCESSING_FILE).read_text(encoding="utf-8"))
        vocabulary = inside(folder, spec["vocabulary"]).read_text(encoding="utf-8").split("\n")[:-1]
        self.pieces = OffsetPieces(vocabulary, json.loads(inside(folder, spec["wordpiece"]).read_text("utf-8")))
        settings = json.loads(inside(folder, spec["reader"]).read_text(encoding="utf-8"))
        self.sequence_length, self.stride = settings["sequence_length"], settings["stride"]
        self.max_question, self.max_answer = settings["max_question_tokens"], settings["max_answer_tokens"]
        self.unanswerable = settings["unanswerable"]
        self.no_answer_threshold = settings.get("no_answer_threshold", 0.0)  # exports before it had none: 0
        self.network = open_network(inside(folder, spec["network"]), self.manifest["format"],
                               threads=min(4, os.cpu_count() or 1))

    def windows(self, question: str, context: str) -> tuple[list[list[int]], list[list[int]], tuple, int]:
        """Each window's token ids and context piece per position (-1 elsewhere), the context's pieces' character
        offsets (starts, ends), and the question's pieces."""
        asked = self.pieces.with_offsets(question)[0][:self.max_question]
        ids, starts, ends = self.pieces.with_offsets(context)
        room = self.sequence_length - len(asked) - 3
        count = 1 + -(-max(len(ids) - room, 0) // self.stride)
        cls, sep = self.pieces.start[0], self.pieces.end[0]
        rows, indices = [], []
        for first in range(0, count * self.stride, self.stride):
            last = min(first + room, len(ids))
            rows.append([cls, *asked, sep, *ids[first:last], sep])
            indices.append([-1] * (len(asked) + 2) + list(range(first, last)) + [-1])
        return rows, indices, (starts, ends), len(asked)

    def logits(self, rows: list[list[int]], asked: int) -> np.ndarray:
        """The network's start/end logits (windows, longest, 2), WINDOW_CHUNK windows per call."""
        width = max(len(r) for r in rows)
        token_ids = np.full((len(rows), width), self.pieces.pad, np.int32)
        segment_ids = np.zeros((len(rows), width), np.int32)
        mask = np.zeros((len(rows), width), bool)
        for i, row in enumerate(rows):
            token_ids[i, :len(row)], mask[i, :len(row)] = row, True
            segment_ids[i, asked + 2:len(row)] = 1
        inputs = {"token_ids": token_ids, "segment_ids": segment_ids, "padding_mask": mask}
        return np.concatenate([np.asarray(self.network({k: v[i:i + WINDOW_CHUNK] for k, v in inputs.items()}),
                                          np.float32) for i in range(0, len(rows), WINDOW_CHUNK)])

    def window_probabilities(self, question: str, context: str):
        """Per window: its context piece per position (-1 elsewhere), which positions are the context's, and the
        start and end probabilities (a softmax over [CLS] and the context's pieces); and the pieces' offsets."""
        rows, indices, offsets, asked = self.windows(question, context)
        logits = self.logits(rows, asked)
        found = []
        for n, index in enumerate(indices):
            index = np.asarray(index)
            in_context = index >= 0
            allowed = in_context.copy()
            allowed[0] = True
            masked = np.where(allowed[:, None], logits[n, :len(index)], -1e9)
            masked = np.exp(masked - masked.max(axis=0))
            probabilities = (masked / masked.sum(axis=0)).astype(np.float32)
            found.append((index, in_context, probabilities[:, 0], probabilities[:, 1]))
        return found, offsets

    def spans(self, index, in_context, first, last):
        """(position i, the positions a span starting there may end at, their start x end probabilities)."""
        for i in np.flatnonzero(in_context):
            span = np.arange(i, min(i + self.max_answer, len(index)))
            span = span[in_context[span]]
            if len(span):
                yield i, span, first[i] * last[span]

    def answer(self, questions: Sequence[str], contexts: Sequence[str]) -> dict[str, np.ndarray]:
        """{"answer" (UTF-8 bytes), "start", "end" (character offsets, -1 for none), "score"}, one row each."""
        found = {"answer": [], "start": [], "end": [], "score": []}
        for question, context in zip(questions, contexts):
            windows, (starts, ends) = self.window_probabilities(question, context)
            best, null = (-1.0, 0, 0, 0), np.inf
            for n, (index, in_context, first, last) in enumerate(windows):
                null = min(null, float(first[0] * last[0]))
                for i, span, products in self.spans(index, in_context, first, last):
                    j = int(np.argmax(products))
                    if products[j] > best[0]:
                        best = (float(products[j]), n, int(index[i]), int(index[span[j]]))
            score, _, first_piece, last_piece = best
            if score < 0 or (self.unanswerable and null > score * np.exp(self.no_answer_threshold)):
                found["answer"].append(b""), found["start"].append(-1), found["end"].append(-1)
                found["score"].append(null if np.isfinite(null) else 0.0)
                continue
            start, end = starts[first_piece], ends[last_piece]
            found["answer"].append(context[start:end].encode("utf-8"))
            found["start"].append(start), found["end"].append(end), found["score"].append(score)
        return {"answer": np.array(found["answer"], dtype=object), "start": np.array(found["start"], np.int32),
                "end": np.array(found["end"], np.int32), "score": np.array(found["score"], np.float32)}

    def n_best(self, questions: Sequence[str], contexts: Sequence[str], k: int) -> dict[str, np.ndarray]:
        """The SavedModel's `n_best`: each question's k likeliest spans over its windows, likeliest first, a span
        once at its best window's probability (padded with b"", -1, -1, 0), and `no_answer_score`."""
        if not 1 <= k <= N_BEST_MOST:
            raise ValueError(f"k must be at least 1 and at most {N_BEST_MOST}. Received: k={k}")
        shape = (len(questions), k)
        out = {"answers": np.full(shape, b"", object), "starts": np.full(shape, -1, np.int32),
               "ends": np.full(shape, -1, np.int32), "scores": np.zeros(shape, np.float32),
               "no_answer_score": np.zeros(len(questions), np.float32)}
        for row, (question, context) in enumerate(zip(questions, contexts)):
            windows, (starts, ends) = self.window_probabilities(question, context)
            best = {}
            for index, in_context, first, last in windows:
                for i, span, products in self.spans(index, in_context, first, last):
                    for j, product in zip(span, products):
                        key = (int(index[i]), int(index[j]))
                        best[key] = max(best.get(key, -1.0), float(product))
            out["no_answer_score"][row] = min((float(first[0] * last[0]) for _, _, first, last in windows),
                                              default=0.0)
            for rank, ((first_piece, last_piece), score) in enumerate(sorted(best.items(), key=lambda s: -s[1])[:k]):
                start, end = starts[first_piece], ends[last_piece]
                out["answers"][row, rank] = context[start:end].encode("utf-8")
                out["starts"][row, rank], out["ends"][row, rank], out["scores"][row, rank] = start, end, score
        return out
