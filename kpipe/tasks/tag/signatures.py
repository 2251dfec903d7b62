"""The tagger's export: `serving_default` takes raw strings, splits their words in the graph
(`kpipe.preprocessing.tagging.split_words`) and returns the words, their tags and the entities (label, character
start and end, text, score); `tag_tokens` takes words already split (a 2-D string tensor, "" as padding) and
returns a tag and a score per word. Both decode as the report did: Viterbi with a CRF, each word's best tag with a
softmax; a word's score is its tag's probability (the CRF's marginal), an entity's the mean over its words."""

from __future__ import annotations

from pathlib import Path

import keras
import tensorflow as tf

from kpipe.evaluation import reporting
from kpipe.portable.export_files import TABLES_FILE, TAGS_FILE
from kpipe.exports import run_files, saved_model
from kpipe.preprocessing.tagging import TaggerInputs, split_words


class TaggerServing(tf.Module):
    def __init__(self, model: keras.Model, inputs: TaggerInputs, tags: list[str]):
        super().__init__(name="tagger_serving")
        self.model, self.inputs = model, inputs
        self.crf = next((layer for layer in model.layers if layer.name == "crf"), None)
        self.tag_names = tf.constant(tags)
        types = [t.split("-", 1)[1] if "-" in t else "" for t in tags]
        self.tag_types = tf.constant(types)
        self.begins = tf.constant([t.startswith("B-") for t in tags])
        # Both signatures call one traced graph of the model (a trace costs seconds), not one each
        self.tag_ids = tf.function(self._tag_ids, input_signature=[tf.TensorSpec([None, None], tf.string)])
        self.tag_tokens = tf.function(self._tag_tokens, input_signature=[
            tf.TensorSpec([None, None], tf.string, name="tokens")])
        self.serve = tf.function(self._serve, input_signature=[tf.TensorSpec([None], tf.string, name="text")])

    def _tag_ids(self, tokens: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        """(batch, words) tag ids and their probabilities (0 and 0 on padding)."""
        width = tf.shape(tokens)[1]
        tokens = tf.pad(tokens, [[0, 0], [0, tf.maximum(1 - width, 0)]], constant_values="")  # a batch of "" alone
        lengths = tf.reduce_sum(tf.cast(tf.not_equal(tokens, ""), tf.int32), axis=1)
        outputs = self.model(self.inputs(tokens), training=False)
        if self.crf is not None:
            ids = self.crf.viterbi(outputs, lengths)
            probabilities = self.crf.marginals(outputs, lengths)
        else:
            ids = tf.argmax(outputs, axis=-1, output_type=tf.int32)
            probabilities = tf.cast(outputs, tf.float32)
        present = tf.sequence_mask(lengths, tf.shape(tokens)[1])
        scores = tf.gather(probabilities, ids, batch_dims=2)
        return tf.where(present, ids, 0)[:, :width], tf.where(present, scores, 0.0)[:, :width]

    def _tag_tokens(self, tokens):
        ids, scores = self.tag_ids(tokens)
        tags = tf.where(tf.not_equal(tokens, ""), tf.gather(self.tag_names, ids), "")
        return {"tags": tags, "scores": scores}

    def _serve(self, text):
        words, starts, ends = split_words(text)
        tokens = words.to_tensor("")
        ids, scores = self.tag_ids(tokens)
        present = tf.not_equal(tokens, "")
        tags = tf.where(present, tf.gather(self.tag_names, ids), "")
        return {"words": tokens, "tags": tags, **self._entities(text, ids, scores, present, starts.to_tensor(-1),
                                                                ends.to_tensor(-1))}

    def _entities(self, text, ids, scores, present, starts, ends) -> dict:
        """The entities of each text, padded with "" / -1 / 0 to the most any text of the batch has."""
        kinds = tf.gather(self.tag_types, ids)
        inside = present & tf.not_equal(kinds, "")
        previous = tf.pad(kinds, [[0, 0], [1, 0]])[:, :-1]
        previous_inside = tf.pad(inside, [[0, 0], [1, 0]])[:, :-1]
        # conlleval: B- starts an entity, and so does an I- that continues nothing (another type, or O, before it)
        first = inside & (tf.gather(self.begins, ids) | ~previous_inside | tf.not_equal(previous, kinds))
        number = tf.cumsum(tf.cast(first, tf.int32), axis=1) - 1  # each word's entity, within its text
        count = tf.reduce_sum(tf.cast(first, tf.int32), axis=1)
        most = tf.reduce_max(tf.concat([count, [0]], 0))  # 0 for an empty batch
        rows = tf.broadcast_to(tf.range(tf.shape(ids)[0])[:, None], tf.shape(ids))
        columns = tf.broadcast_to(tf.range(tf.shape(ids)[1])[None, :], tf.shape(ids))
        segment = tf.where(inside, rows * most + number, tf.shape(ids)[0] * most)  # outside: a dropped segment
        segments = tf.shape(ids)[0] * most + 1
        flat = lambda t: tf.reshape(t, [-1])  # noqa: E731
        start = tf.math.unsorted_segment_min(flat(starts), flat(segment), segments)[:-1]
        end = tf.math.unsorted_segment_max(flat(ends), flat(segment), segments)[:-1]
        score = tf.math.unsorted_segment_mean(flat(scores), flat(segment), segments)[:-1]
        first_word = tf.math.unsorted_segment_min(flat(columns), flat(segment), segments)[:-1]
        shape = tf.stack([tf.shape(ids)[0], most])
        start, end, score = tf.reshape(start, shape), tf.reshape(end, shape), tf.reshape(score, shape)
        first_word = tf.reshape(first_word, shape)
        real = tf.range(most)[None, :] < count[:, None]
        label = tf.gather(kinds, tf.where(real, first_word, 0), batch_dims=1)
        texts = tf.broadcast_to(text[:, None], shape)
        covered = tf.strings.substr(texts, tf.where(real, start, 0), tf.where(real, end - start, 0), unit="UTF8_CHAR")
        return {"entity_labels": tf.where(real, label, ""), "entity_starts": tf.where(real, start, -1),
                "entity_ends": tf.where(real, end, -1), "entity_scores": tf.where(real, score, 0.0),
                "entity_texts": tf.where(real, covered, "")}


def write_tagger_export(path: Path, *, model: keras.Model, serving: TaggerServing, config, metrics: dict,
                        history: list[dict], work_dir: Path, tags: list[str], scheme: str,
                        tables: dict | None = None) -> None:
    """The SavedModel (`serving_default` on raw text, `tag_tokens` on words), the run files, the tag names and
    (an `rnn_tagger`) its word and character tables, ids from 2 in list order (what `kpipe export` reads)."""
    saved_model.write_saved_model(path, tracked=[model, serving, serving.inputs],
                                  endpoints={"serving_default": serving.serve, "tag_tokens": serving.tag_tokens})
    run_files.write_run_files(path, model=model, config=config, metrics=metrics, history=history, work_dir=work_dir)
    reporting.write_json({"tags": tags, "scheme": "iob2", "read_as": scheme}, path / TAGS_FILE)
    if tables is not None:
        reporting.write_json(tables, path / TABLES_FILE)
