"""Question + context -> the encoder's windows, with every context word piece's byte offsets in the raw context, in
the graph (the export runs the same code as training).

keras-hub's WordPiece tokenizer gives no offsets, so `WordPieceOffsets` re-does its steps word by word: the raw
text is split on whitespace, punctuation and CJK characters with TensorFlow Text's `regex_split_with_offsets` (the
tokenizer's own patterns), each word is normalised as the tokenizer does (accents stripped after NFD, case folded),
and `FastWordpieceTokenizer.tokenize_with_offsets` cuts it into pieces. A piece's offsets are exact when
normalising kept the word's length in bytes and in characters (ASCII, and most text); a word whose length changed
("Åland" loses a byte, "Straße" folds to "strasse") gives each of its pieces the whole word's span, so a span never starts or ends inside a character. The ids are
pinned equal to the tokenizer's own (tests/unit/preprocessing/test_answer_windows.py).

A context longer than a window is read in overlapping windows: `[CLS] question [SEP] context[s : s + room] [SEP]`
for s = 0, stride, 2 stride, ... until the context's end is in a window, where room = sequence_length - question
pieces - 3 (BERT's `doc_stride`: the step between two windows' starts).
"""

from __future__ import annotations

import tensorflow as tf
import tensorflow_text as tf_text

MAX_BYTES_PER_WORD = 100  # a longer word is one unknown piece, as keras-hub's tokenizer does


def _split_patterns(split_on_cjk: bool, special_tokens: list[str]) -> tuple[str, str]:
    import re

    from keras_hub.src.tokenizers import word_piece_tokenizer as patterns  # the tokenizer's own, kept in step

    split = patterns.WHITESPACE_PUNCTUATION_AND_CJK_REGEX if split_on_cjk else patterns.WHITESPACE_AND_PUNCTUATION_REGEX
    keep = patterns.PUNCTUATION_AND_CJK_REGEX if split_on_cjk else patterns.PUNCTUATION_REGEX
    if special_tokens:
        special = "|".join(re.escape(token) for token in special_tokens)
        split, keep = f"{special}|{split}", f"{special}|{keep}"
    return split, keep


class WordPieceOffsets(tf.Module):
    """A keras-hub `WordPieceTokenizer`'s ids, with each piece's byte offsets [start, end) in the raw text."""

    def __init__(self, tokenizer):
        super().__init__(name="word_piece_offsets")
        config = tokenizer.get_config()
        self.lowercase, self.strip_accents = config["lowercase"], config["strip_accents"]
        self.special_tokens = list(tokenizer._special_tokens_for_splitting() or [])  # kept whole, not lowercased
        self.split, self.keep = _split_patterns(config.get("split_on_cjk", True), self.special_tokens)
        self.fast = tf_text.FastWordpieceTokenizer(
            vocab=list(tokenizer.get_vocabulary()), suffix_indicator=config["suffix_indicator"],
            max_bytes_per_word=MAX_BYTES_PER_WORD, token_out_type=tf.int32, unknown_token=config["oov_token"],
            no_pretokenization=True, support_detokenization=False)

    def normalize(self, words: tf.Tensor) -> tf.Tensor:
        normalized = words
        if self.strip_accents:
            normalized = tf.strings.regex_replace(tf_text.normalize_utf8(normalized, "NFD"), r"\p{Mn}", "")
        if self.lowercase:
            folded = tf_text.case_fold_utf8(normalized)
            if self.special_tokens:
                special = tf.reduce_any(tf.equal(words[:, None], tf.constant(self.special_tokens)[None, :]), axis=1)
                folded = tf.where(special, normalized, folded)
            normalized = folded
        return normalized

    def __call__(self, text: tf.Tensor) -> tuple[tf.RaggedTensor, tf.RaggedTensor, tf.RaggedTensor]:
        """(batch,) strings -> ids, starts, ends: each (batch, pieces) ragged, int32 / int64 byte offsets."""
        words, starts, ends = tf_text.regex_split_with_offsets(text, self.split, self.keep)
        normalized = self.normalize(words.flat_values)
        pieces, piece_starts, piece_ends = self.fast.tokenize_with_offsets(normalized)  # (words, pieces)
        owner = pieces.value_rowids()  # each piece's word
        word_starts = tf.gather(starts.flat_values, owner)
        word_bytes = tf.gather(ends.flat_values - starts.flat_values, owner)
        length = lambda t, unit: tf.gather(tf.strings.length(t, unit=unit), owner)  # noqa: E731
        same = (tf.equal(length(normalized, "BYTE"), length(words.flat_values, "BYTE"))
                & tf.equal(length(normalized, "UTF8_CHAR"), length(words.flat_values, "UTF8_CHAR")))
        piece_starts = word_starts + tf.where(same, piece_starts.flat_values, 0)
        piece_ends = word_starts + tf.where(same, piece_ends.flat_values, word_bytes)
        by_text = lambda values: words.with_flat_values(pieces.with_flat_values(values)).merge_dims(1, 2)  # noqa: E731
        return by_text(pieces.flat_values), by_text(piece_starts), by_text(piece_ends)


class AnswerWindows(tf.Module):
    """Questions and contexts -> the windows the encoder reads, and where each window's pieces are in its context.

    Returns (from `__call__`), for N windows of longest L pieces:
        token_ids, segment_ids, padding_mask: (N, L) the encoder's inputs, right-padded.
        context_index: (N, L) the context piece each position holds, -1 for [CLS], the question, [SEP] and padding.
        example: (N,) the question each window belongs to.
        starts, ends: (batch, C + 1) each context piece's byte offsets in its context, -1 past its last piece (C: the
            most pieces a context of the batch has).
    """

    def __init__(self, tokenizer, *, sequence_length: int, stride: int, max_question_tokens: int):
        super().__init__(name="answer_windows")
        self.pieces = WordPieceOffsets(tokenizer)
        self.sequence_length, self.stride, self.max_question_tokens = sequence_length, stride, max_question_tokens
        self.cls, self.sep, self.pad = tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id

    def __call__(self, question: tf.Tensor, context: tf.Tensor) -> dict[str, tf.Tensor]:
        question_ids = self.pieces(question)[0][:, :self.max_question_tokens]
        context_ids, starts, ends = self.pieces(context)
        question_length = tf.cast(question_ids.row_lengths(), tf.int32)
        context_length = tf.cast(context_ids.row_lengths(), tf.int32)
        room = self.sequence_length - question_length - 3
        more = tf.maximum(context_length - room, 0)
        count = 1 + (more + self.stride - 1) // self.stride
        example = tf.repeat(tf.range(tf.shape(count)[0]), count)
        first = tf.ragged.range(count).flat_values * self.stride
        last = tf.minimum(first + tf.gather(room, example), tf.gather(context_length, example))
        positions = tf.ragged.range(first, last)  # (N, ·) context piece indices
        offset = tf.cast(tf.gather(context_ids.row_starts(), example), tf.int32)
        window_ids = positions.with_flat_values(tf.gather(
            context_ids.flat_values, positions.flat_values + tf.repeat(offset, positions.row_lengths())))
        asked = tf.gather(question_ids, example)
        column = lambda value: tf.fill([tf.shape(example)[0], 1], tf.constant(value, tf.int32))  # noqa: E731
        ragged_column = lambda value: tf.RaggedTensor.from_tensor(column(value))  # noqa: E731
        token_ids = tf.concat([ragged_column(self.cls), asked, ragged_column(self.sep), window_ids,
                               ragged_column(self.sep)], axis=1)
        segment_ids = tf.concat([ragged_column(0), tf.zeros_like(asked),
                                 ragged_column(0), tf.ones_like(window_ids), ragged_column(1)], axis=1)
        context_index = tf.concat([ragged_column(-1), tf.ones_like(asked) * -1, ragged_column(-1), positions,
                                   ragged_column(-1)], axis=1)
        token_ids = token_ids.to_tensor(self.pad)
        # one column more than the longest context has: a batch of empty contexts still has a column to gather from
        offsets = lambda t: tf.pad(tf.cast(t.to_tensor(-1), tf.int64), [[0, 0], [0, 1]], constant_values=-1)  # noqa: E731
        return {"token_ids": token_ids, "segment_ids": segment_ids.to_tensor(0),
                "padding_mask": tf.not_equal(context_index.to_tensor(-2), -2), "context_index":
                context_index.to_tensor(-1), "example": example,
                "starts": offsets(starts), "ends": offsets(ends)}
