"""The reader's export: `serving_default` takes `question` and `context` (string tensors) and returns `answer` (the
span's exact characters), `start` and `end` (character offsets into the context, end exclusive) and `score`;
windows, offsets and decoding run inside the graph. `n_best` (question, context, k) returns each question's k
likeliest spans with their probabilities.

Decoding, as the reference systems do: in each window, a softmax over [CLS] and the context's pieces gives every
piece a start and an end probability; the best span is the start <= end pair within `max_answer_tokens` pieces with
the largest product; a question's answer is its best window's span. A model trained with unanswerable questions
answers "" (start = end = -1) when every window's [CLS] pair scores above the best span by more than the
threshold the run chose on validation, as SQuAD v2.0 systems do.
The encoder reads the windows WINDOW_CHUNK at a time, so a request of long contexts (many windows) costs time in
proportion to its text (which the server bounds), never memory beyond one chunk's.
"""

from __future__ import annotations

import json
from pathlib import Path

import keras
import tensorflow as tf

from kpipe.evaluation import reporting
from kpipe.portable.export_files import ANSWERS_FILE, READER_FILE, VOCABULARY_FILE, WORDPIECE_FILE
from kpipe.exports import run_files, saved_model
from kpipe.portable.reader import N_BEST_MOST
from kpipe.preprocessing.answer_windows import AnswerWindows

NOT_ALLOWED = -1e9
WINDOW_CHUNK = 64  # windows the encoder reads per call inside the graph: bounds one request's memory


class AnswerServing(tf.Module):
    def __init__(self, model: keras.Model, windows: AnswerWindows, *, max_answer_tokens: int, unanswerable: bool):
        super().__init__(name="answer_serving")
        self.model, self.windows = model, windows
        self.max_answer_tokens, self.unanswerable = max_answer_tokens, unanswerable
        # log(no-answer probability) - log(best span's) above which an unanswerable-trained model answers "": 0
        # until the run chooses it on validation (kpipe.evaluation.squad.best_no_answer_threshold)
        self.no_answer_threshold = tf.Variable(0.0, trainable=False, name="no_answer_threshold")
        self.inputs = {tensor.name.split(":")[0]: tensor.dtype for tensor in model.inputs}
        strings = tf.TensorSpec([None], tf.string)
        # Both signatures call one traced graph of the windows and the encoder (a trace costs seconds), not one each
        self.read = tf.function(self._read, input_signature=[strings, strings])
        self.serve = tf.function(self._serve, input_signature=[tf.TensorSpec([None], tf.string, name="question"),
                                                               tf.TensorSpec([None], tf.string, name="context")])
        self.n_best = tf.function(self._n_best, input_signature=[
            tf.TensorSpec([None], tf.string, name="question"), tf.TensorSpec([None], tf.string, name="context"),
            tf.TensorSpec([], tf.int32, name="k")])

    def _read(self, question, context) -> tuple[dict, tf.Tensor, tf.Tensor]:
        """The questions' windows, and every span's probability in each (`span_products`)."""
        windows = self.windows(question, context)
        return (windows, *self.span_products(windows))

    def best_spans(self, flat: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
        """Per window (a row of `span_products`): the best span's probability, its first and last positions."""
        width = self.max_answer_tokens
        best = tf.argmax(flat, axis=1, output_type=tf.int32)
        return tf.reduce_max(flat, axis=1), best // width, best // width + best % width

    def span_products(self, windows: dict) -> tuple[tf.Tensor, tf.Tensor]:
        """Per window, every span's start x end probability (N, L * max_answer_tokens; -1 where no span may be: the
        span starting at position i and `a` pieces long is at i * max_answer_tokens + a), and the [CLS] pair's."""
        logits = self.logits({name: tf.cast(windows[name], dtype) for name, dtype in self.inputs.items()})
        in_context = windows["context_index"] >= 0
        allowed = in_context | (tf.range(tf.shape(in_context)[1]) == 0)[None, :]
        probabilities = tf.nn.softmax(tf.where(allowed[..., None], tf.cast(logits, tf.float32), NOT_ALLOWED), axis=1)
        starts, ends = probabilities[..., 0], probabilities[..., 1]
        width = self.max_answer_tokens  # ends[n, i + a] for a < width: (N, L, width)
        ends_after = tf.signal.frame(ends, width, 1, pad_end=True, pad_value=0.0, axis=1)
        context_after = tf.signal.frame(in_context, width, 1, pad_end=True, pad_value=False, axis=1)
        valid = in_context[..., None] & context_after
        products = tf.where(valid, starts[..., None] * ends_after, -1.0)
        null = tf.reshape(starts[:, :1] * ends[:, :1], [-1])  # [:1], not [0]: a batch of no questions has no column
        return tf.reshape(products, [tf.shape(products)[0], -1]), null

    def logits(self, inputs: dict[str, tf.Tensor]) -> tf.Tensor:
        """The model's logits (N, L, 2) over the windows, in equal chunks of at most WINDOW_CHUNK windows called in
        turn: however many windows a request's contexts make, the encoder's activations are those of one chunk, and
        fewer than one window per chunk is padding (one question's single window is one call of one window)."""
        count = tf.shape(inputs["padding_mask"])[0]
        chunks = tf.maximum((count + WINDOW_CHUNK - 1) // WINDOW_CHUNK, 1)
        size = (count + chunks - 1) // chunks  # equal chunks, as few padding windows as can be (fewer than chunks)
        padded = {name: tf.pad(value, [[0, chunks * size - count], [0, 0]]) for name, value in inputs.items()}
        stacked = {name: tf.reshape(value, [chunks, size, -1]) for name, value in padded.items()}
        logits = tf.map_fn(lambda chunk: tf.cast(self.model(chunk, training=False), tf.float32), stacked,
                           fn_output_signature=tf.TensorSpec([None, None, 2], tf.float32), parallel_iterations=1)
        return tf.reshape(logits, [chunks * size, -1, 2])[:count]

    def _serve(self, question, context):
        return self.answer(question, context)

    def answer(self, question: tf.Tensor, context: tf.Tensor) -> dict[str, tf.Tensor]:
        windows, flat, null = self.read(question, context)
        score, first, last = self.best_spans(flat)
        example, count = windows["example"], tf.shape(question)[0]
        top = tf.math.unsorted_segment_max(score, example, count)
        number = tf.range(tf.shape(example)[0])
        is_top = score >= tf.gather(top, example)
        window = tf.math.unsorted_segment_min(tf.where(is_top, number, tf.shape(example)[0]), example, count)
        found = top >= 0  # an empty context has no span
        window = tf.where(found, window, 0)
        index = tf.gather(windows["context_index"], window)
        first_piece = tf.maximum(tf.gather(index, tf.gather(first, window), batch_dims=1), 0)
        last_piece = tf.maximum(tf.gather(index, tf.gather(last, window), batch_dims=1), 0)
        start_byte = tf.gather(windows["starts"], first_piece, batch_dims=1)
        end_byte = tf.gather(windows["ends"], last_piece, batch_dims=1)
        if self.unanswerable:
            found &= tf.math.unsorted_segment_min(null, example, count) <= top * tf.exp(self.no_answer_threshold)
        text, start, end = character_span(context, tf.where(found, start_byte, 0), tf.where(found, end_byte, 0))
        return {"answer": text, "start": tf.where(found, start, -1), "end": tf.where(found, end, -1),
                "score": tf.where(found, top, tf.math.unsorted_segment_min(null, example, count))}

    def _n_best(self, question, context, k):
        """Each question's k likeliest spans over all its windows, likeliest first, a span once (at its best
        window's probability): `answers`, `starts`, `ends` (character offsets, end exclusive), `scores`, each
        (questions, k), padded with "", -1, -1, 0 where there are fewer; and `no_answer_score`, the [CLS] pair's
        lowest probability over the windows (what a model trained with unanswerable questions weighs the spans
        against). The first span is `serving_default`'s answer whenever that answer is a span."""
        with tf.control_dependencies([
                tf.debugging.assert_positive(k, message="k must be at least 1"),
                tf.debugging.assert_less_equal(k, N_BEST_MOST, message=f"k must be at most {N_BEST_MOST}")]):
            windows, flat, null = self.read(question, context)
        values, position = tf.math.top_k(flat, tf.minimum(k, tf.shape(flat)[1]))
        width, index = self.max_answer_tokens, windows["context_index"]
        first_piece = tf.gather(index, position // width, batch_dims=1)
        last_piece = tf.gather(index, position // width + position % width, batch_dims=1)
        example = tf.broadcast_to(windows["example"][:, None], tf.shape(values))
        valid = values >= 0
        values, first_piece, last_piece, example = (tf.boolean_mask(t, valid)
                                                   for t in (values, first_piece, last_piece, example))
        # A span in two overlapping windows is one candidate, at its better probability.
        pieces = tf.cast(tf.shape(windows["starts"])[1], tf.int64)
        key = (tf.cast(example, tf.int64) * pieces + tf.cast(first_piece, tf.int64)) * pieces + tf.cast(
            last_piece, tf.int64)
        unique, which = tf.unique(key)
        best = tf.math.unsorted_segment_max(values, which, tf.shape(unique)[0])
        example = tf.cast(unique // (pieces * pieces), tf.int32)
        count = tf.shape(question)[0]
        order = tf.argsort(tf.cast(example, tf.float64) * 2.0 - tf.cast(best, tf.float64), stable=True)

        def by_question(values, default):  # (count, k): each question's candidates, likeliest first
            ragged = tf.RaggedTensor.from_value_rowids(tf.gather(values, order), tf.gather(example, order),
                                                       nrows=count)
            dense = ragged.to_tensor(default)
            return tf.pad(dense, [[0, 0], [0, tf.maximum(k - tf.shape(dense)[1], 0)]], constant_values=default)[:, :k]

        scores = by_question(best, -1.0)
        found = scores >= 0
        first_piece, last_piece = by_question(unique // pieces % pieces, 0), by_question(unique % pieces, 0)
        start_byte = tf.where(found, tf.gather(windows["starts"], first_piece, batch_dims=1), 0)
        end_byte = tf.where(found, tf.gather(windows["ends"], last_piece, batch_dims=1), 0)
        text, start, end = character_span(tf.broadcast_to(context[:, None], tf.shape(start_byte)), start_byte,
                                          end_byte)
        return {"answers": text, "starts": tf.where(found, start, -1), "ends": tf.where(found, end, -1),
                "scores": tf.where(found, scores, 0.0),
                "no_answer_score": tf.math.unsorted_segment_min(null, windows["example"], count)}


def character_span(context, start_byte, end_byte):
    """The text between two byte offsets of each context, and its character offsets [start, end) in it."""
    text = tf.strings.substr(context, start_byte, end_byte - start_byte, unit="BYTE")
    start = tf.strings.length(tf.strings.substr(context, tf.zeros_like(start_byte), start_byte, unit="BYTE"),
                              unit="UTF8_CHAR")
    return text, start, start + tf.strings.length(text, unit="UTF8_CHAR")


def write_reader_export(path: Path, *, model: keras.Model, serving: AnswerServing, config, metrics: dict,
                        history: list[dict], work_dir: Path, answers: list[dict], vocabulary: list[str],
                        wordpiece: dict) -> None:
    """The SavedModel (`serving_default`: question and context -> answer; `n_best`: the k likeliest spans), the run
    files, the test split's answers (question id, gold answers, prediction, score, EM and F1), a JSON object per
    line, and the tokenizer's vocabulary and settings (what `kpipe export` needs to answer without TensorFlow)."""
    saved_model.write_saved_model(path, tracked=[model, serving, serving.windows],
                                  endpoints={"serving_default": serving.serve, "n_best": serving.n_best})
    run_files.write_run_files(path, model=model, config=config, metrics=metrics, history=history, work_dir=work_dir)
    pre = config.preprocessing
    reporting.write_json({"sequence_length": pre.sequence_length, "stride": pre.stride,
                          "max_question_tokens": pre.max_question_tokens, "max_answer_tokens": pre.max_answer_tokens,
                          "unanswerable": serving.unanswerable,
                          "no_answer_threshold": float(serving.no_answer_threshold.numpy())}, path / READER_FILE)
    (path / VOCABULARY_FILE).write_text("".join(token + "\n" for token in vocabulary), encoding="utf-8")
    reporting.write_json(wordpiece, path / WORDPIECE_FILE)
    with open(path / ANSWERS_FILE, "w", encoding="utf-8") as out:
        out.writelines(json.dumps(answer, ensure_ascii=False) + "\n" for answer in answers)
