"""A pretrained encoder's input in NumPy and the standard library: keras-hub's WordPiece tokenization (its own
Python port of TensorFlow Text's, from keras_hub/src/tokenizers/word_piece_tokenizer.py, Apache-2.0: split on
white space, control characters, punctuation and CJK characters, keep the punctuation and CJK, NFKC case
folding, greedy longest-match-first word pieces) and its `MultiSegmentPacker` for one text ([CLS] pieces [SEP],
right-padded), the pieces cut as kpipe's `preprocessing.truncating` says. Pinned to the TensorFlow
preprocessing in tests/unit/portable/test_wordpiece.py."""

from __future__ import annotations

import unicodedata
from typing import Sequence

import numpy as np

MAX_BYTES_PER_WORD = 100  # TensorFlow Text's FastWordpieceTokenizer maps longer words to the unknown token
CJK_RANGES = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F), (0x2B740, 0x2B81F),
              (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))


def is_whitespace(c: str) -> bool:
    return c in " \t\n\r\f" or unicodedata.category(c) in ("Cc", "Cf")


def is_punctuation(c: str) -> bool:
    o = ord(c)
    return 33 <= o <= 47 or 58 <= o <= 64 or 91 <= o <= 96 or 123 <= o <= 126 or unicodedata.category(c)[0] == "P"


def is_cjk(c: str) -> bool:
    o = ord(c)
    return any(low <= o <= high for low, high in CJK_RANGES)


def is_default_ignorable(c: str) -> bool:
    """Unicode's Default_Ignorable_Code_Point (what NFKC_Casefold removes), as keras-hub approximates it."""
    o = ord(c)
    return (o in (0x00AD, 0x034F, 0x061C, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x3164, 0xFEFF, 0xFFA0)
            or 0x180B <= o <= 0x180F or 0x200B <= o <= 0x200F or 0x202A <= o <= 0x202E or 0x2060 <= o <= 0x206F
            or 0xFE00 <= o <= 0xFE0F or 0xFFF0 <= o <= 0xFFF8 or 0x1BCA0 <= o <= 0x1BCA3
            or 0x1D173 <= o <= 0x1D17A or 0xE0000 <= o <= 0xE0FFF)


def casefold(text: str) -> str:
    """NFKC_Casefold, as `tf_text.case_fold_utf8` (keras-hub's `casefold_utf8`)."""
    text = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
    return "".join(c for c in text if not is_default_ignorable(c))


class WordPieceIds:
    """Texts -> a BERT-style encoder's inputs: token_ids, segment_ids (zeros), padding_mask, (batch, length)."""

    def __init__(self, vocabulary: Sequence[str], settings: dict):
        tokenizer, packer = settings["tokenizer"], settings["packer"]
        self.index = {token: i for i, token in enumerate(vocabulary)}
        self.lowercase, self.strip_accents = tokenizer["lowercase"], tokenizer["strip_accents"]
        self.split, self.split_on_cjk = tokenizer["split"], tokenizer["split_on_cjk"]
        self.suffix, self.unknown = tokenizer["suffix_indicator"], self.index[tokenizer["oov_token"]]
        self.special = tuple(tokenizer.get("special_tokens") or ())
        self.sequence_length = packer["sequence_length"]
        self.start, self.end, self.pad = packer["start_value"], packer["end_value"], packer["pad_value"]
        self.truncating = settings["truncating"]

    def words(self, text: str) -> list[str]:
        """keras-hub's `pretokenize_python`: accents stripped, split (punctuation and CJK kept as words),
        lower-cased by NFKC case folding (special tokens kept as they are)."""
        if self.strip_accents:
            text = "".join(c for c in unicodedata.normalize("NFD", text) if unicodedata.category(c) != "Mn")
        words, current = [], []
        if not self.split:
            words = [text]
        else:
            position = 0
            while position < len(text):
                special = next((s for s in self.special if text.startswith(s, position)), None)
                c = text[position]
                if special or is_whitespace(c) or is_punctuation(c) or (self.split_on_cjk and is_cjk(c)):
                    if current:
                        words.append("".join(current))
                        current = []
                    if special:
                        words.append(special)
                        position += len(special)
                        continue
                    if not is_whitespace(c):
                        words.append(c)
                else:
                    current.append(c)
                position += 1
            if current:
                words.append("".join(current))
        if self.lowercase:
            words = [w if w in self.special else casefold(w) for w in words]
        return words

    def spans(self, word: str) -> list[tuple[int, int, int]]:
        """Greedy longest-match-first word pieces of one word as (id, start, end) in its characters (the unknown
        token over the whole word if it cannot be covered)."""
        if not word:
            return []
        if len(word.encode("utf-8")) > MAX_BYTES_PER_WORD:
            return [(self.unknown, 0, len(word))]
        found, start = [], 0
        while start < len(word):
            end = len(word)
            while start < end and (word[start:end] if start == 0 else self.suffix + word[start:end]) not in self.index:
                end -= 1
            if start == end:
                return [(self.unknown, 0, len(word))]
            found.append((self.index[word[start:end] if start == 0 else self.suffix + word[start:end]], start, end))
            start = end
        return found

    def pieces(self, word: str) -> list[int]:
        """The ids of `spans`."""
        return [piece for piece, _, _ in self.spans(word)]

    def ids(self, text: str) -> list[int]:
        """One text's packed ids: start, its pieces cut to fit ("pre" keeps the end, "post" the start,
        "head_tail" the first quarter and the rest from the end), end."""
        pieces = [i for w in self.words(text) for i in self.pieces(w)]
        room = self.sequence_length - len(self.start) - len(self.end)
        if len(pieces) > room:
            if self.truncating == "pre":
                pieces = pieces[len(pieces) - room:]
            elif self.truncating == "head_tail":
                head = room // 4
                pieces = pieces[:head] + pieces[len(pieces) - (room - head):]
            else:
                pieces = pieces[:room]
        return self.start + pieces + self.end

    def __call__(self, texts: Sequence[str], length: int | None = None) -> dict[str, np.ndarray]:
        """The encoder's inputs, padded to `length` or to the batch's longest text."""
        rows = [self.ids(t) for t in texts]
        width = length or max(1, max((len(r) for r in rows), default=1))  # an empty text keeps a column
        token_ids = np.full((len(rows), width), self.pad, np.int32)
        for i, row in enumerate(rows):
            token_ids[i, :len(row)] = row
        mask = np.zeros((len(rows), width), bool)
        for i, row in enumerate(rows):
            mask[i, :len(row)] = True
        return {"token_ids": token_ids, "segment_ids": np.zeros_like(token_ids), "padding_mask": mask}
