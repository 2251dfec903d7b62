"""Text classification end to end: data -> vocabulary -> tf.data -> RNN -> report -> SavedModel.

The export takes a batch of raw strings and returns class probabilities and label names; it
needs only TensorFlow to load (`tf.saved_model.load(path).serve(tf.constant([...]))`).
"""

from __future__ import annotations

import dataclasses
import logging
import time
import warnings
from pathlib import Path
from typing import Sequence

import keras
import numpy as np
import tensorflow as tf

from kpipe import export, manifest, reporting
from kpipe.datasets.corpus import CorpusDataConfig, load_corpus
from kpipe.datasets.text_classification import (TextSplits,
                                                load_text_classification)
from kpipe.embeddings import align_to_vocabulary, load_word_vectors
from kpipe.evaluation import tfidf_baseline
from kpipe.models.rnn_classifier import build_rnn_classifier
from kpipe.models.transformer_classifier import (MaskedMeanPooling, TransformerClassifierConfig,
                                                 build_masked_lm, build_transformer_classifier, encoder_weights)
from kpipe.preprocessing.masked_lm import make_masked_lm_dataset
from kpipe.pipeline_config import PipelineConfig, RunResult
from kpipe.preprocessing.text import (TextPreprocessingConfig, bucket_boundaries, encode_texts, fit_vocabulary,
                                      make_text_dataset, make_vectorizer, token_lengths)
from kpipe.runs import Run
from kpipe.training import FineTuneSchedule

log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class Prediction:
    """One classified text: the top label, its probability, and every class's probability."""

    text: str
    label: str
    probability: float
    probabilities: dict[str, float]


# === Serving ===

class ClassifierServing(tf.Module):
    """Raw strings -> {probabilities, label, label_id}: the vectorizer and model in one graph."""

    def __init__(self, model: keras.Model, vectorizer: keras.layers.TextVectorization,
                 preprocessing: TextPreprocessingConfig, label_names: Sequence[str]):
        super().__init__()
        self.model = model
        self.vectorizer = vectorizer
        self.preprocessing = preprocessing
        self.label_names = tf.constant(list(label_names))
        self.encoder = None
        if any(layer.name == "encoder_output" for layer in model.layers):
            self.encoder = keras.Model(model.inputs, model.get_layer("encoder_output").output)
            self.pooling = MaskedMeanPooling()
            self.embed = tf.function(self.embed, input_signature=[tf.TensorSpec([None], tf.string, name="text")])

    def embed(self, text: tf.Tensor) -> dict[str, tf.Tensor]:
        """Sentence embeddings: the masked mean of the encoder outputs (transformer classifiers)."""
        token_ids = encode_texts(self.vectorizer, text, self.preprocessing)
        outputs = self.encoder(token_ids, training=False)
        mask = tf.not_equal(token_ids, 0)
        extra = tf.shape(outputs)[1] - tf.shape(mask)[1]  # a [CLS] position the model put in front
        mask = tf.concat([tf.ones([tf.shape(mask)[0], extra], tf.bool), mask], axis=1)
        return {"embedding": self.pooling(outputs, mask=mask)}

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="text")])
    def serve(self, text: tf.Tensor) -> dict[str, tf.Tensor]:
        token_ids = encode_texts(self.vectorizer, text, self.preprocessing)
        probabilities = self.model(token_ids, training=False)
        if probabilities.shape[-1] == 1:  # binary: one sigmoid unit -> two columns
            probabilities = tf.concat([1.0 - probabilities, probabilities], axis=-1)
        label_id = tf.argmax(probabilities, axis=-1)
        return {"probabilities": probabilities, "label": tf.gather(self.label_names, label_id),
                "label_id": label_id}


def write_classifier_export(path: Path, *, model: keras.Model, vectorizer, config: PipelineConfig,
                            label_names: Sequence[str], vocabulary: list[str], metrics: dict,
                            history: list[dict], work_dir: Path) -> None:
    """Write the SavedModel and everything a user needs beside it into `path`."""
    serving = ClassifierServing(model, vectorizer, config.preprocessing, label_names)
    endpoints = {"serve": serving.serve, **({"embed": serving.embed} if serving.encoder is not None else {})}
    export.write_saved_model(path, tracked=[model, vectorizer], endpoints=endpoints)
    export.write_run_files(path, model=model, config=config, metrics=metrics, history=history, work_dir=work_dir)
    (path / "labels.txt").write_text("\n".join(label_names) + "\n", encoding="utf-8")
    (path / "vocabulary.txt").write_text("\n".join(vocabulary) + "\n", encoding="utf-8")
    pretraining = metrics.get("masked_lm_pretraining")
    if pretraining and pretraining["history"]:
        reporting.plot_training_curves(pretraining["history"], path / "masked_lm_curves.png",
                                       title=f"{config.name}: masked-LM pretraining on {pretraining['corpus']}")


# === Running the pipeline ===

def tfidf_baseline_metrics(splits: TextSplits) -> dict:
    """The TF-IDF + logistic regression baseline on the same splits: its test metrics and settings."""
    result = tfidf_baseline.fit_and_predict(splits.train.texts, splits.train.labels, splits.validation.texts,
                                            splits.validation.labels, splits.test.texts)
    scores = reporting.classification_metrics(splits.test.labels, result.predicted, splits.label_names)
    return {**result.report(), "accuracy": scores["accuracy"], "macro_f1": scores["macro_f1"]}


def comparison_table(metrics: dict) -> str:
    """The model beside the baseline (when there is one), as the run prints it."""
    rows = [("model", metrics)] + ([("tfidf + logistic regression", metrics["baseline"])]
                                   if metrics.get("baseline") else [])
    lines = [f"{'classifier':30s} {'accuracy':>9s} {'macro F1':>9s}"]
    lines += [f"{name:30s} {row['accuracy']:9.4f} {row['macro_f1']:9.4f}" for name, row in rows]
    return "\n".join(lines)


def pretraining_texts(model_config: TransformerClassifierConfig, splits: TextSplits) -> tuple[np.ndarray, str]:
    """The unlabeled texts the masked-LM pretraining reads, and where they come from.

    Loaded before any training, so a missing corpus file fails in seconds, not after the vocabulary.
    """
    corpus = model_config.pretrain_corpus
    if not corpus:
        return splits.train.texts, f"the {len(splits.train)} training texts"
    source = "embedded" if corpus == "world-english-bible" else "file"
    lines = load_corpus(CorpusDataConfig(source=source, name=corpus if source == "embedded" else "",
                                         path=corpus if source == "file" else ""))
    return np.array(lines, dtype=object), f"{len(lines)} lines of {corpus}"


def pretrain_encoder(run: Run, texts: np.ndarray, validation_texts: np.ndarray, vectorizer,
                     pre: TextPreprocessingConfig, model_config: TransformerClassifierConfig) -> tuple[dict[str, list], dict]:
    """Masked-LM pretraining of the transformer encoder on unlabeled `texts`.

    The masked-token loss and accuracy are also measured on `validation_texts` (the classifier's
    validation split), so a corpus from another domain shows how well it transfers.

    Returns:
        (encoder layer name → weights, a report: epochs, masked-token loss and accuracy per epoch).
    """
    def dataset(texts, shuffle):
        return make_masked_lm_dataset(texts, vectorizer, pre, vocabulary_size=model_config.vocabulary_size,
                                      mask_rate=model_config.mask_rate, batch_size=run.global_batch,
                                      shuffle=shuffle, seed=run.config.training.seed)

    log.info("Masked-LM pretraining: %d epoch(s) on %d texts, %.0f%% of tokens masked",
             model_config.pretrain_epochs, len(texts), 100 * model_config.mask_rate)
    started = time.perf_counter()
    masked_lm, history = run.train(
        lambda: build_masked_lm(model_config), subdir="masked_lm",
        # Averaged over the masked positions only: the fixed-size position list is padded (weight 0)
        # for short texts, and those slots must count neither in the loss nor in the accuracy.
        loss=keras.losses.SparseCategoricalCrossentropy(reduction="mean_with_sample_weight"),
        metrics=[], weighted_metrics=["sparse_categorical_accuracy"], train_data=dataset(texts, True),
        validation_data=dataset(validation_texts, False) if len(validation_texts) else None,
        config=dataclasses.replace(run.config.training, epochs=model_config.pretrain_epochs))
    report = {"epochs": len(history), "seconds": round(time.perf_counter() - started, 2), "history": history}
    return encoder_weights(masked_lm), report


def run_classify(config: PipelineConfig) -> RunResult:
    """Train, evaluate and export a text classifier as described by `config`.

    Returns:
        The export folder and the test metrics (also in `<export>/metrics.json`).
    """
    with Run(config) as run:
        return _run_classify(run, config)


def _run_classify(run: Run, config: PipelineConfig) -> RunResult:
    splits: TextSplits = load_text_classification(config.data)
    pre: TextPreprocessingConfig = config.preprocessing
    transformer = isinstance(config.model, TransformerClassifierConfig)
    pretrain_texts = None
    if transformer and config.model.pretrain_epochs:
        pretrain_texts, pretrain_source = pretraining_texts(config.model, splits)
    vectors = None
    if not transformer and config.model.pretrained_embeddings:  # loaded first, so a bad file fails in seconds
        vectors = load_word_vectors(config.model.pretrained_embeddings, expected_dim=config.model.embedding_dim)
    vocabulary = fit_vocabulary(splits.train.texts, pre, cache_dir=run.export_root / ".cache")
    vectorizer = make_vectorizer(pre, vocabulary)
    log.info("Vocabulary: %d tokens (fitted on the training split)", len(vocabulary))

    batch_size = run.global_batch
    boundaries = bucket_boundaries(token_lengths(splits.train.texts, vectorizer), pre)
    if boundaries:
        log.info("Length buckets (token boundaries): %s", boundaries)
    seed = config.training.seed
    train_ds = make_text_dataset(splits.train.texts, splits.train.labels, vectorizer, pre, batch_size=batch_size,
                                 shuffle=True, seed=seed, boundaries=boundaries)
    val_ds = make_text_dataset(splits.validation.texts, splits.validation.labels, vectorizer, pre,
                               batch_size=batch_size, boundaries=boundaries)

    model_config = dataclasses.replace(config.model, vocabulary_size=len(vocabulary), num_classes=splits.num_classes,
                                       **({"sequence_length": pre.sequence_length} if transformer else {}))
    pretrained, coverage = None, None
    if vectors is not None:
        pretrained, coverage = align_to_vocabulary(vectors, vocabulary, seed=config.training.seed)

    fine_tune = None
    if not transformer and model_config.embedding_training == "two_phase":
        fine_tune = FineTuneSchedule(model_config.frozen_epochs, model_config.fine_tune_learning_rate,
                                     unfreeze=lambda model: setattr(model.get_layer("embedding"), "trainable", True))

    pretrained_encoder, pretraining = {}, None
    if pretrain_texts is not None:
        pretrained_encoder, pretraining = pretrain_encoder(run, pretrain_texts, splits.validation.texts, vectorizer,
                                                           pre, model_config)
        pretraining["corpus"] = pretrain_source

    def build() -> keras.Model:
        if transformer:
            model = build_transformer_classifier(model_config)
            for name, weights in pretrained_encoder.items():  # start from the masked-LM encoder
                model.get_layer(name).set_weights(weights)
            return model
        model = build_rnn_classifier(model_config,
                                     trainable_embeddings=model_config.embedding_training == "trainable")
        if pretrained is not None:
            # Assigned after building: a Constant initializer would copy the whole matrix into the
            # model's JSON config (and every .keras file). BackupAndRestore overrides it on resume.
            model.get_layer("embedding").embeddings.assign(pretrained)
        return model

    binary = splits.num_classes == 2
    model, history = run.train(
        build, loss="binary_crossentropy" if binary else "sparse_categorical_crossentropy",
        metrics=["accuracy"], train_data=train_ds, validation_data=val_ds, fine_tune=fine_tune)

    # Test split in its original order (no bucketing, which reorders).
    test_ds = make_text_dataset(splits.test.texts, splits.test.labels, vectorizer, pre, batch_size=batch_size)
    with warnings.catch_warnings():  # see train_model: unknown-size datasets end by running out
        warnings.filterwarnings("ignore", message="Your input ran out of data")
        probabilities = model.predict(test_ds, verbose=0)
    predicted = (probabilities[:, 0] > 0.5).astype(int) if binary else probabilities.argmax(axis=1)
    metrics = reporting.classification_metrics(splits.test.labels, predicted, splits.label_names)
    metrics.update({
        **run.common_metrics(history),
        "data": {"source": config.data.describe(), "train": len(splits.train),
                 "validation": len(splits.validation), "test": len(splits.test)},
        "vocabulary_size": len(vocabulary),
        "embedding_coverage": coverage.as_dict() if coverage else None,
        "masked_lm_pretraining": pretraining,
    })
    if config.evaluation.baseline:
        metrics["baseline"] = tfidf_baseline_metrics(splits)
    log.info("Test on %d examples:\n%s", len(splits.test), comparison_table(metrics))

    version_dir = run.publish(lambda folder: write_classifier_export(
        folder, model=model, vectorizer=vectorizer, config=config, label_names=splits.label_names,
        vocabulary=vocabulary, metrics=metrics, history=history, work_dir=run.work_dir),
        data=(splits.train.texts.tolist(), splits.train.labels.tolist()))
    summary = (f"Test on {len(splits.test)} examples:\n{comparison_table(metrics)}\nExported to {version_dir} (report: metrics.json, training_curves.png)\n"
               f'Try: kpipe predict {version_dir} "your text here"')
    return RunResult(version_dir, metrics, summary)


# === Predicting with an export ===

def load_classifier(model: str | Path, export_dir: str | Path = "saved_models"):
    """Load an exported classifier (a version folder, a folder of versions, or a pipeline name).

    Returns:
        (loaded SavedModel, label names in column order of its probabilities).
    """
    path = export.resolve_model_dir(model, export_dir)
    manifest.require(path, "classify", "kpipe predict")
    label_names = (path / "labels.txt").read_text(encoding="utf-8").splitlines()
    return export.load_saved_model(path), label_names


def predict_texts(model: str | Path, texts: Sequence[str], export_dir: str | Path = "saved_models",
                  batch_size: int = 256) -> list[Prediction]:
    """Classify raw strings with an exported model.

    Args:
        model: a version folder, a folder of versions (latest taken) or a pipeline name.
        texts: the raw strings.
        export_dir: where pipeline names are looked up.
        batch_size: strings per call to the model.

    Example:
        >>> predict_texts("sentiment-bilstm", ["@united thanks, great flight!"])[0].label
        'positive'
    """
    loaded, label_names = load_classifier(model, export_dir)
    results = []
    for start in range(0, len(texts), batch_size):
        batch = list(texts[start:start + batch_size])
        out = loaded.serve(tf.constant(batch, tf.string))
        labels = [label.decode("utf-8") for label in out["label"].numpy()]
        for text, label, row in zip(batch, labels, out["probabilities"].numpy()):
            results.append(Prediction(text, label, float(row.max()),
                                      {name: float(p) for name, p in zip(label_names, row)}))
    return results
