"""The classifier export: one `tf.Module` that takes raw strings (and second texts, for pairs) and returns
class probabilities and label names; it needs only TensorFlow to load
(`tf.saved_model.load(path).serve(tf.constant([...]))`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import keras
import numpy as np
import tensorflow as tf

from kpipe.config.pipeline import PipelineConfig
from kpipe.evaluation import reporting
from kpipe.portable.export_files import LABELS_FILE, MULTI_LABEL_FILE, VOCABULARY_FILE
from kpipe.exports import manifest, run_files, saved_model
from kpipe.layers.masked_pooling import MaskedMeanPooling
from kpipe.preprocessing.ngrams import NgramFeatures
from kpipe.tasks.classify.members import Member


class ClassifierServing(tf.Module):
    """Raw strings -> {probabilities, label, label_id}: features and model(s) in one graph.

    With several members the probabilities are their weighted average (weights sum to 1).

    A recurrent member runs XLA-compiled (`Member.compiled_length`): on a CPU one review through the
    imdb-bilstm BiLSTM takes ~20-30 ms as TensorFlow ops, step by step, and ~5 ms compiled. XLA compiles
    once per input shape, so the ids are padded to the member's full sequence length and the batch to the
    next power of two (padding rows are all-padding and cut off after): at most log2(batch) + 1 shapes,
    each compiled on its first call (about a second); the answers are unchanged (masking).
    """

    def __init__(self, members: Sequence[Member], weights: Sequence[float], label_names: Sequence[str],
                 thresholds: Sequence[float] | None = None, separator: str = "|", pairs: bool = False):
        super().__init__()
        # Several labels per text: one sigmoid per label, and the labels over their thresholds
        self.thresholds = None if thresholds is None else tf.constant(np.asarray(thresholds, np.float32))
        self.separator = separator
        self.members = list(members)
        self.models = [m.model for m in members]
        self.tracked = [item for m in members for item in m.tracked]
        self.weights = [float(w) for w in weights]
        self.label_names = tf.constant(list(label_names))
        self.compiled = [tf.function(lambda ids, model=m.model: model(ids, training=False), jit_compile=True)
                         if m.compiled_length else None for m in members]
        self.encoder = None
        model = members[0].model
        if pairs:  # `serve_pairs(text, text_pair)` is the export's `serve`; a pair model embeds no single sentence
            return
        if len(members) == 1 and members[0].embed is not None:  # the family says how it embeds
            self.encoder = members[0].embed
            self.embed = tf.function(lambda text: {"embedding": members[0].embed(text)},
                                     input_signature=[tf.TensorSpec([None], tf.string, name="text")])
        elif len(members) == 1 and any(layer.name == "encoder_output" for layer in model.layers):
            self.encoder = keras.Model(model.inputs, model.get_layer("encoder_output").output)
            self.pooling = MaskedMeanPooling()
            self.embed = tf.function(self.embed, input_signature=[tf.TensorSpec([None], tf.string, name="text")])

    def embed(self, text: tf.Tensor) -> dict[str, tf.Tensor]:
        """Sentence embeddings: the masked mean of the encoder outputs (transformer classifiers)."""
        token_ids = self.members[0].encode(text)
        outputs = self.encoder(token_ids, training=False)
        mask = tf.not_equal(token_ids, 0)
        extra = tf.shape(outputs)[1] - tf.shape(mask)[1]  # a [CLS] position the model put in front
        mask = tf.concat([tf.ones([tf.shape(mask)[0], extra], tf.bool), mask], axis=1)
        return {"embedding": self.pooling(outputs, mask=mask)}

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="text")])
    def serve(self, text: tf.Tensor) -> dict[str, tf.Tensor]:
        return self.classify(text)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="text"),
                                  tf.TensorSpec([None], tf.string, name="text_pair")])
    def serve_pairs(self, text: tf.Tensor, text_pair: tf.Tensor) -> dict[str, tf.Tensor]:
        return self.classify(tf.stack([text, text_pair], axis=1))

    def classify(self, text: tf.Tensor) -> dict[str, tf.Tensor]:
        """(batch,) strings, or (batch, 2) pairs -> the outputs of `serve`."""
        probabilities = 0.0
        for member, weight, compiled in zip(self.members, self.weights, self.compiled):
            inputs = member.encode(text)
            output = (padded_call(compiled, inputs, member.compiled_length) if compiled is not None
                      else member.model(inputs, training=False))
            if output.shape[-1] == 1:  # binary: one sigmoid unit -> two columns
                output = tf.concat([1.0 - output, output], axis=-1)
            probabilities += weight * output
        if self.thresholds is not None:
            predicted = probabilities >= self.thresholds
            names = tf.broadcast_to(self.label_names, tf.shape(predicted))  # every row's label names
            joined = tf.strings.reduce_join(tf.ragged.boolean_mask(names, predicted), axis=-1,
                                            separator=self.separator)
            return {"probabilities": probabilities, "predicted": tf.cast(predicted, tf.int64), "labels": joined}
        label_id = tf.argmax(probabilities, axis=-1)
        return {"probabilities": probabilities, "label": tf.gather(self.label_names, label_id),
                "label_id": label_id}


def padded_call(function, ids: tf.Tensor, length: int) -> tf.Tensor:
    """`function(ids)` on ids padded to (next power of two rows, `length` columns) with 0s, cut back to its rows
    (ids (batch, time), or (batch, 2, time) for pairs)."""
    rows = tf.shape(ids)[0]
    bucket = tf.while_loop(lambda b: b < rows, lambda b: b * 2, [tf.constant(1)])[0]
    middle = [[0, 0]] * (ids.shape.rank - 2)  # a pair's axis of two texts
    padded = tf.pad(ids, [[0, bucket - rows], *middle, [0, length - tf.shape(ids)[-1]]])
    return function(padded)[:rows]


def write_classifier_export(path: Path, *, members: Sequence[Member], weights: Sequence[float],
                            config: PipelineConfig, label_names: Sequence[str], metrics: dict,
                            work_dir: Path, thresholds: Sequence[float] | None = None) -> None:
    """Write the SavedModel and everything a user needs beside it into `path`.

    The last member is the main one (the sequence model of an ensemble): its Keras model is
    `model.keras` and its vocabulary `vocabulary.txt`; an ensemble's n-gram and recurrent members (their
    `role`) are written as `ngrams_model.keras`, `recurrent_model.keras` and their vocabularies.
    """
    separator = config.data.label_separator or "|"
    pairs = getattr(config.data, "pairs", False)
    serving = ClassifierServing(members, weights, label_names, thresholds, separator, pairs=pairs)
    endpoints = {"serve": serving.serve_pairs if pairs else serving.serve,
                 **({"embed": serving.embed} if serving.encoder is not None else {})}
    saved_model.write_saved_model(path, tracked=[*serving.models, *serving.tracked], endpoints=endpoints)
    main = members[-1]
    history = [h for member in members for h in member.history]
    run_files.write_run_files(path, model=main.model, config=config, metrics=metrics, history=history,
                           work_dir=work_dir)
    (path / LABELS_FILE).write_text("\n".join(label_names) + "\n", encoding="utf-8")
    if thresholds is not None:  # several labels per text: each label's decision threshold, in the manifest too
        multi_label = {"labels": list(label_names), "thresholds": [round(float(t), 4) for t in thresholds],
                       "separator": separator}
        reporting.write_json(multi_label, path / MULTI_LABEL_FILE)
        manifest.update(path, multi_label=multi_label)
    (path / VOCABULARY_FILE).write_text("\n".join(main.vocabulary) + "\n", encoding="utf-8")
    for member in members[:-1]:
        if member.role:  # an ensemble's n-gram and recurrent members, beside the main model
            member.model.save(path / f"{member.role}_model.keras")
            (path / f"{member.role}_vocabulary.txt").write_text("\n".join(member.vocabulary) + "\n", encoding="utf-8")
    for member in members:  # what `kpipe export` needs beside a portable network: n-gram idf, WordPiece settings
        prefix = f"{member.role}_" if member.role else ""
        for item in member.tracked:
            if isinstance(item, NgramFeatures):
                np.save(path / f"{prefix}idf.npy", item.idf.numpy())
        if member.tokenizer_settings is not None:
            reporting.write_json(member.tokenizer_settings, path / f"{prefix}wordpiece.json")
    pretraining = main.report.get("masked_lm_pretraining")
    if pretraining and pretraining["history"]:
        reporting.plot_training_curves(pretraining["history"], path / "masked_lm_curves.png",
                                       title=f"{config.name}: masked-LM pretraining on {pretraining['corpus']}")
