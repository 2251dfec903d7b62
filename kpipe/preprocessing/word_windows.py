"""Sentences of words -> a pretrained encoder's windows, and where each word's first word piece is read, in the graph
(training and the export run the same code).

Each word is cut into pieces by the preset's own WordPiece tokenizer (a word that gives none reads as [UNK]); a
sentence is `[CLS] pieces [SEP]` when it fits `sequence_length`, else overlapping windows whose starts are `stride`
pieces apart, so no sentence is ever cut. A word is read in the window where its first piece is farthest from the
window's edges (the most context on both sides), at that piece's position.
"""

from __future__ import annotations

import tensorflow as tf

from kpipe.preprocessing.tagging import casing_ids


class WordPieceWindows(tf.Module):
    """(batch, words) strings, "" as padding -> {"token_ids", "segment_ids", "padding_mask"} (windows, longest),
    "word_index" (batch, words): each word's row in the windows flattened to (windows * longest), "word_mask"
    (batch, words), and with `casing` each word's casing class (`kpipe.preprocessing.tagging.casing_ids`)."""

    def __init__(self, tokenizer, *, sequence_length: int, stride: int, casing: bool = False):
        super().__init__(name="word_piece_windows")
        self.tokenizer, self.casing = tokenizer, casing
        self.room, self.stride = sequence_length - 2, stride
        if not 0 < stride <= self.room:
            raise ValueError(f"`stride` must be in [1, {self.room}]. Received: stride={stride}")
        self.cls, self.sep, self.pad = tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id
        self.unknown = tokenizer.token_to_id(tokenizer.get_config()["oov_token"])

    def word_pieces(self, words: tf.Tensor) -> tf.RaggedTensor:
        """(W,) words -> (W, pieces) ragged ids, at least one piece each."""
        pieces = self.tokenizer(words)
        if isinstance(pieces, list):  # keras-hub answers eager calls in Python lists (graphs get tensors)
            pieces = tf.RaggedTensor.from_row_lengths([i for row in pieces for i in row], [len(r) for r in pieces])
        pieces = tf.cast(pieces if isinstance(pieces, tf.RaggedTensor) else tf.RaggedTensor.from_tensor(pieces),
                         tf.int32)
        lengths = tf.cast(pieces.row_lengths(), tf.int32)
        padded = tf.concat([pieces, tf.fill([tf.shape(words)[0], 1], tf.constant(self.unknown, tf.int32))], axis=1)
        starts = tf.cast(padded.row_starts(), tf.int32)
        keep = tf.ragged.range(starts, starts + tf.maximum(lengths, 1))
        return keep.with_flat_values(tf.gather(padded.flat_values, keep.flat_values))

    def __call__(self, tokens: tf.Tensor) -> dict[str, tf.Tensor]:
        tokens = tf.convert_to_tensor(tokens, tf.string)
        present = tf.not_equal(tokens, "")
        words_per_sentence = tf.reduce_sum(tf.cast(present, tf.int32), axis=1)
        pieces = self.word_pieces(tf.boolean_mask(tokens, present))  # (W, pieces), words in sentence order
        piece_counts = tf.cast(pieces.row_lengths(), tf.int32)
        sentence_pieces = tf.RaggedTensor.from_row_lengths(piece_counts, words_per_sentence)
        lengths = tf.reduce_sum(sentence_pieces, axis=1)  # (batch,) pieces per sentence
        batch = tf.shape(tokens)[0]
        # each word's first piece, counted within its sentence
        before = tf.cumsum(piece_counts, exclusive=True)
        sentence_of_word = tf.repeat(tf.range(batch), words_per_sentence)
        first = before - tf.gather(tf.cumsum(lengths, exclusive=True), sentence_of_word)
        # the windows: starts 0, stride, ... until the sentence's end is in one
        count = 1 + (tf.maximum(lengths - self.room, 0) + self.stride - 1) // self.stride
        sentence_of_window = tf.repeat(tf.range(batch), count)
        start = tf.ragged.range(count).flat_values * self.stride
        end = tf.minimum(start + self.room, tf.gather(lengths, sentence_of_window))
        positions = tf.ragged.range(start, end)
        offset = tf.gather(tf.cumsum(lengths, exclusive=True), sentence_of_window)
        window_ids = positions.with_flat_values(tf.gather(
            pieces.flat_values, positions.flat_values + tf.repeat(offset, positions.row_lengths())))
        column = lambda value: tf.RaggedTensor.from_tensor(  # noqa: E731
            tf.fill([tf.shape(start)[0], 1], tf.constant(value, tf.int32)))
        token_ids = tf.concat([column(self.cls), window_ids, column(self.sep)], axis=1).to_tensor(self.pad)
        width = tf.shape(token_ids)[1]
        # the window whose edges are farthest from the word's first piece: among the windows that hold it
        window_offset = tf.cumsum(count, exclusive=True)
        sentence_count = tf.gather(count, sentence_of_word)
        sentence_length = tf.gather(lengths, sentence_of_word)
        lowest = tf.maximum((first - self.room + self.stride) // self.stride, 0)
        best_margin, best = tf.fill(tf.shape(first), -1), tf.zeros_like(first)
        for k in range(-(-self.room // self.stride) + 1):  # at most this many windows hold one piece
            j = lowest + k
            w_start = j * self.stride
            w_end = tf.minimum(w_start + self.room, sentence_length)
            holds = (j < sentence_count) & (w_start <= first) & (first < w_end)
            margin = tf.where(holds, tf.minimum(first - w_start, w_end - 1 - first), -1)
            better = margin > best_margin
            best_margin, best = tf.where(better, margin, best_margin), tf.where(better, j, best)
        window = tf.gather(window_offset, sentence_of_word) + best
        row = window * width + 1 + first - best * self.stride  # +1: [CLS]
        word_index = tf.scatter_nd(tf.where(present), row, tf.shape(tokens, out_type=tf.int64))
        casing = {"casing": casing_ids(tokens)} if self.casing else {}
        return {**casing, "token_ids": token_ids, "segment_ids": tf.zeros_like(token_ids),
                "padding_mask": tf.not_equal(tf.concat([column(1), tf.ones_like(window_ids), column(1)], axis=1)
                                             .to_tensor(0), 0),
                "word_index": word_index, "word_mask": present}
