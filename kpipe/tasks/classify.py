"""Text classification end to end: data -> features -> tf.data -> model(s) -> report -> SavedModel.

Families: a (Bi)LSTM/GRU on token ids, a transformer encoder on WordPiece sub-words, a linear or
one-hidden-layer model on bag-of-n-grams features, and an ensemble of an n-gram and a recurrent model
(each family's training is in `kpipe.tasks.classifier_members`). Every run reports the model beside
the TF-IDF + logistic regression baseline on the same split.

The export takes a batch of raw strings and returns class probabilities and label names; it
needs only TensorFlow to load (`tf.saved_model.load(path).serve(tf.constant([...]))`).
"""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path
from typing import Callable, Sequence

import keras
import numpy as np
import tensorflow as tf

from kpipe.cache import keep_xla_programs
from kpipe.exports import manifest, run_files, saved_model
from kpipe.exports.open import call_in_batches, open_export

from kpipe.evaluation import reporting
from kpipe.evaluation.classification import classification_metrics
from kpipe.datasets.text_classification import TextSplits, load_text_classification
from kpipe.evaluation import multi_label, tfidf_baseline
from kpipe.evaluation.multi_label import choose_thresholds, multi_label_metrics
from kpipe.models.configs import EnsembleClassifierConfig, pretrained_preset
from kpipe.models.masked_pooling import MaskedMeanPooling
from kpipe.config.pipeline import PipelineConfig, RunResult
from kpipe.pretrained import presets
from kpipe.training.run import Run
from kpipe.tasks.classifier_members import Member, train_member

log = logging.getLogger(__name__)

ENSEMBLE_WEIGHTS = np.round(np.linspace(0.0, 1.0, 21), 2)  # n-gram shares tried on validation
MULTI_LABEL_FILE = "multi_label.json"  # label names, thresholds and separator of a multi-label export


@dataclasses.dataclass(frozen=True)
class Prediction:
    """One classified text: the top label, its probability, and every class's probability. With several labels
    per text: `labels` over their thresholds, `label` those joined by the export's separator, `probability` the
    highest label probability."""

    text: str
    label: str
    probability: float
    probabilities: dict[str, float]
    labels: tuple[str, ...] | None = None  # several labels per text only
    text_pair: str | None = None  # the second text, for a pair model


# === Serving ===

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
    (path / "labels.txt").write_text("\n".join(label_names) + "\n", encoding="utf-8")
    if thresholds is not None:  # several labels per text: each label's decision threshold, in the manifest too
        multi_label = {"labels": list(label_names), "thresholds": [round(float(t), 4) for t in thresholds],
                       "separator": separator}
        reporting.write_json(multi_label, path / MULTI_LABEL_FILE)
        manifest.update(path, multi_label=multi_label)
    (path / "vocabulary.txt").write_text("\n".join(main.vocabulary) + "\n", encoding="utf-8")
    for member in members[:-1]:
        if member.role:  # an ensemble's n-gram and recurrent members, beside the main model
            member.model.save(path / f"{member.role}_model.keras")
            (path / f"{member.role}_vocabulary.txt").write_text("\n".join(member.vocabulary) + "\n", encoding="utf-8")
    pretraining = main.report.get("masked_lm_pretraining")
    if pretraining and pretraining["history"]:
        reporting.plot_training_curves(pretraining["history"], path / "masked_lm_curves.png",
                                       title=f"{config.name}: masked-LM pretraining on {pretraining['corpus']}")


# === Running the pipeline ===

def run_classify(config: PipelineConfig) -> RunResult:
    """Train, evaluate and export a text classifier as described by `config`.

    Returns:
        The export folder and the test metrics (also in `<export>/metrics.json`).
    """
    keep_xla_programs()  # the compiled members compile once per batch size, then never again on this machine
    with Run(config) as run:
        return _run_classify(run, config)


def _run_classify(run: Run, config: PipelineConfig) -> RunResult:
    splits: TextSplits = load_text_classification(config.data)
    pre = config.preprocessing

    if isinstance(config.model, EnsembleClassifierConfig):
        members, weights, ensemble_report = train_ensemble(run, config, splits)
    else:
        members, weights, ensemble_report = [train_member(run, config.model, splits, pre)], [1.0], None
    history = [h for member in members for h in member.history]

    # === Test split, in its original order ===
    probabilities = sum(w * m.probabilities(splits.test.texts, splits.test.labels) for m, w in zip(members, weights))
    thresholds = None
    if splits.multi_label:  # thresholds from validation, then the test split scored with them
        validation = sum(w * m.probabilities(splits.validation.texts, splits.validation.labels)
                         for m, w in zip(members, weights))
        thresholds = choose_thresholds(splits.validation.labels, validation, fallback=config.evaluation.threshold,
                                       per_label=config.evaluation.thresholds == "per_label")
        metrics = multi_label_metrics(splits.test.labels, probabilities >= thresholds, splits.label_names)
        metrics["thresholds"] = {name: round(float(t), 4) for name, t in zip(splits.label_names, thresholds)}
    else:
        metrics = classification_metrics(splits.test.labels, probabilities.argmax(axis=1), splits.label_names)
    metrics.update({
        **run.common_metrics(history),
        "data": {"source": config.data.describe(), "train": len(splits.train),
                 "validation": len(splits.validation), "test": len(splits.test)},
        **members[-1].report,
        **({"ensemble": ensemble_report} if ensemble_report else {}),
    })
    if config.evaluation.baseline:
        metrics["baseline"] = (one_vs_rest_metrics(splits, config.evaluation.baseline_analyzer) if splits.multi_label
                               else tfidf_baseline_metrics(splits))
    log.info("Test on %d examples:\n%s", len(splits.test), comparison_table(metrics))

    version_dir = run.publish(lambda folder: write_classifier_export(
        folder, members=members, weights=weights, config=config, label_names=splits.label_names, metrics=metrics,
        work_dir=run.work_dir, thresholds=thresholds),
        data=(splits.train.texts.tolist(), splits.train.labels.tolist()))
    summary = (f"Test on {len(splits.test)} examples:\n{comparison_table(metrics)}\nExported to {version_dir} "
               f"(report: metrics.json, training_curves.png)\n"
               + (f'Try: kpipe predict {version_dir} --pair "first text" "second text"' if splits.pairs
                  else f'Try: kpipe predict {version_dir} "your text here"'))
    return RunResult(version_dir, metrics, summary)


def train_ensemble(run: Run, config: PipelineConfig, splits: TextSplits) -> tuple[list[Member], list[float], dict]:
    """Train an ensemble's members one after the other, each resumable in its own work folder, and weigh
    them on validation: (members, weights, report). Order: the n-gram member first, then the recurrent
    member if any, then the sequence member(s), the last being the export's main model."""
    model, pre = config.model, config.preprocessing
    preset, preset_key = pretrained_preset(model)
    with presets.naming(preset_key):
        if preset:  # a missing download stops the run before any training
            presets.load_preprocessor(preset, pre.sequence_length)
    members = [dataclasses.replace(train_member(run, model.ngrams, splits, pre, subdir="ngrams",
                                                training=model.ngrams_training), role="ngrams")]
    if model.recurrent:  # with its own words when [model.recurrent_preprocessing] says so
        members.append(dataclasses.replace(train_member(run, model.recurrent, splits,
                                                        model.recurrent_preprocessing or pre, subdir="recurrent",
                                                        training=model.recurrent_training), role="recurrent"))
    with presets.naming(preset_key):
        members += [train_member(run, model.sequence, splits, pre, subdir=sequence_subdir(i),
                                 training=dataclasses.replace(config.training, seed=config.training.seed + i))
                    for i in range(model.sequence_members)]
    weights, report = ensemble_weights(members, splits, model.ngram_weight, model.recurrent_weight)
    return members, weights, report


def sequence_subdir(index: int) -> str:
    """The work folder of an ensemble's sequence member `index` (0-based): "sequence", "sequence-2", ..."""
    return "sequence" if index == 0 else f"sequence-{index + 1}"


def ensemble_weights(members: Sequence[Member], splits: TextSplits, ngram_weight: float,
                     recurrent_weight: float = -1.0) -> tuple[list[float], dict]:
    """The members' weights, in their order: the first member is the n-gram one, a member whose role is
    "recurrent" the recurrent one, the others are the sequence members.

    The n-gram member gets `ngram_weight` and the recurrent member `recurrent_weight`; a weight of -1 is
    chosen on validation: the grid point (shares 0, 0.05, ..., 1, summing to at most 1) with the best
    validation accuracy (micro F1 at thresholds chosen on validation, for several labels per text), ties to
    the lower validation log-loss, then to the smaller shares. The sequence members share the rest equally.
    """
    recurrent = next((m for m in members if m.role == "recurrent"), None)
    probabilities = [m.probabilities(splits.validation.texts, splits.validation.labels) for m in members]
    ngrams = probabilities[0]
    sequences = [p for m, p in zip(members[1:], probabilities[1:]) if m is not recurrent]
    third = next((p for m, p in zip(members, probabilities) if m is recurrent), 0.0)
    sequence = np.mean(sequences, axis=0)
    labels = splits.validation.labels

    def figure(probabilities) -> float:
        if splits.multi_label:
            thresholds = choose_thresholds(labels, probabilities)
            return multi_label_metrics(labels, probabilities >= thresholds, [])["micro_f1"]
        return float((probabilities.argmax(axis=1) == labels).mean())

    def score(share, third_share=0.0):
        mixed = share * ngrams + third_share * third + (1 - share - third_share) * sequence
        if splits.multi_label:  # binary cross-entropy per label
            clipped = np.clip(mixed, 1e-7, 1 - 1e-7)
            log_loss = -np.mean(labels * np.log(clipped) + (1 - labels) * np.log(1 - clipped))
        else:
            log_loss = -np.mean(np.log(np.clip(mixed[np.arange(len(labels)), labels], 1e-7, 1.0)))
        return figure(mixed), float(log_loss)

    shares = [ngram_weight] if ngram_weight >= 0 else [float(s) for s in ENSEMBLE_WEIGHTS]
    third_shares = ([0.0] if recurrent is None else [recurrent_weight] if recurrent_weight >= 0
                    else [float(s) for s in ENSEMBLE_WEIGHTS])
    scores = {(a, c): score(a, c) for a in shares for c in third_shares if a + c <= 1.0 + 1e-9}
    share, third_share = max(scores, key=lambda key: (scores[key][0], -scores[key][1], -key[0], -key[1]))
    accuracy = {"ngrams": score(1.0)[0], "sequence": score(0.0)[0], "ensemble": scores[share, third_share][0]}
    if len(sequences) > 1:  # each sequence member alone, beside their mean
        accuracy["sequence_members"] = [figure(p) for p in sequences]
    report = {"ngram_weight": share, "chosen_on_validation": ngram_weight < 0 or (recurrent is not None
                                                                                  and recurrent_weight < 0),
              "validation_micro_f1" if splits.multi_label else "validation_accuracy": accuracy}
    if recurrent is not None:
        accuracy["recurrent"] = score(0.0, 1.0)[0]
        report["recurrent_weight"] = third_share
    log.info("Ensemble: n-gram weight %.2f%s; validation %s n-grams %.4f%s, sequence %.4f%s, ensemble %.4f",
             share, f", recurrent weight {third_share:.2f}" if recurrent else "",
             "micro F1" if splits.multi_label else "accuracy", accuracy["ngrams"],
             f", recurrent {accuracy['recurrent']:.4f}" if recurrent else "", accuracy["sequence"],
             f" (members {', '.join(f'{a:.4f}' for a in accuracy['sequence_members'])})"
             if len(sequences) > 1 else "", accuracy["ensemble"])
    rest = (1.0 - share - third_share) / len(sequences)
    return [share, *(third_share if m is recurrent else rest for m in members[1:])], report


def tfidf_baseline_metrics(splits: TextSplits) -> dict:
    """The TF-IDF + logistic regression baseline on the same splits: its test metrics and settings."""
    result = tfidf_baseline.fit_and_predict(splits.train.texts, splits.train.labels, splits.validation.texts,
                                            splits.validation.labels, splits.test.texts)
    scores = classification_metrics(splits.test.labels, result.predicted, splits.label_names)
    return {**result.report(), "accuracy": scores["accuracy"], "macro_f1": scores["macro_f1"]}


def one_vs_rest_metrics(splits: TextSplits, analyzer: str) -> dict:
    """The one-vs-rest TF-IDF + logistic regression baseline on the same splits: its test metrics and settings."""
    result = multi_label.one_vs_rest_baseline(splits.train.texts, splits.train.labels, splits.validation.texts,
                                              splits.validation.labels, splits.test.texts, analyzer=analyzer)
    scores = multi_label_metrics(splits.test.labels, result.predicted, splits.label_names)
    return {**result.report(), **{k: scores[k] for k in ("micro_f1", "macro_f1", "subset_accuracy")}}


def comparison_table(metrics: dict) -> str:
    """The model beside the baseline (when there is one), as the run prints it."""
    baseline_name = ("one-vs-rest tfidf + logistic" if "micro_f1" in metrics else "tfidf + logistic regression")
    rows = [("model", metrics)] + ([(baseline_name, metrics["baseline"])] if metrics.get("baseline") else [])
    if "micro_f1" in metrics:  # several labels per text
        lines = [f"{'classifier':30s} {'micro F1':>9s} {'macro F1':>9s} {'subset acc':>10s}"]
        lines += [f"{name:30s} {row['micro_f1']:9.4f} {row['macro_f1']:9.4f} {row['subset_accuracy']:10.4f}"
                  for name, row in rows]
        return "\n".join(lines)
    lines = [f"{'classifier':30s} {'accuracy':>9s} {'macro F1':>9s}"]
    lines += [f"{name:30s} {row['accuracy']:9.4f} {row['macro_f1']:9.4f}" for name, row in rows]
    return "\n".join(lines)


# === Predicting with an export ===

def load_classifier(model: str | Path, export_dir: str | Path = "saved_models"):
    """Load an exported classifier (a version folder, a folder of versions, or a pipeline name).

    Returns:
        (loaded SavedModel, label names in column order of its probabilities).
    """
    keep_xla_programs()  # before the export's compiled members first compile
    opened = open_export(model, task="classify", command="kpipe predict", export_dir=export_dir)
    return opened.loaded, (opened.path / "labels.txt").read_text(encoding="utf-8").splitlines()



def predict_texts(model: str | Path, texts: Sequence[str], export_dir: str | Path = "saved_models",
                  batch_size: int = 256, on_batch: Callable[[int], object] | None = None,
                  pairs: Sequence[str] | None = None) -> list[Prediction]:
    """Classify raw strings (or pairs of them: `texts[i]` with `pairs[i]`) with an exported model.

    Args:
        model: a version folder, a folder of versions (latest taken) or a pipeline name.
        texts: the raw strings.
        export_dir: where pipeline names are looked up.
        batch_size: strings per call to the model.
        on_batch: called with the batch's size after each batch (e.g. a progress bar's `update`).
        pairs: the second texts, for a model trained on pairs of texts (its `serve` takes `text_pair`).

    Example:
        >>> predict_texts("sentiment-bilstm", ["@united thanks, great flight!"])[0].label
        'positive'
    """
    loaded, label_names = load_classifier(model, export_dir)
    if pairs is not None and len(pairs) != len(texts):
        raise ValueError(f"{len(texts)} texts and {len(pairs)} second texts: give one second text per text")
    rows = list(zip(texts, pairs)) if pairs is not None else [(text, None) for text in texts]

    def predict(batch: Sequence[tuple[str, str | None]]) -> list[Prediction]:
        first = tf.constant([a for a, _ in batch], tf.string)
        out = loaded.serve(first) if pairs is None else loaded.serve(first, tf.constant([b for _, b in batch]))
        if "predicted" in out:  # several labels per text
            return [Prediction(text, joined.decode("utf-8"), float(row.max()),
                               {name: float(p) for name, p in zip(label_names, row)},
                               tuple(name for name, on in zip(label_names, chosen) if on), second)
                    for (text, second), joined, row, chosen in zip(batch, out["labels"].numpy(),
                                                                   out["probabilities"].numpy(),
                                                                   out["predicted"].numpy())]
        labels = [label.decode("utf-8") for label in out["label"].numpy()]
        return [Prediction(text, label, float(row.max()), {name: float(p) for name, p in zip(label_names, row)},
                           text_pair=second)
                for (text, second), label, row in zip(batch, labels, out["probabilities"].numpy())]

    return [p for batch in call_in_batches(predict, rows, batch_size=batch_size, on_batch=on_batch) for p in batch]
