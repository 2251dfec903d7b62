"""How each classifier family turns the training split into a trained model: a `Member`.

A member is one trained model with the function that turns raw strings into its inputs (token ids
for sequence models, sparse n-gram features for bag-of-n-grams), so the classify task can evaluate,
ensemble and export any of them the same way.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import time
import warnings
from pathlib import Path
from typing import Any, Callable

import keras
import numpy as np
import tensorflow as tf

from kpipe.config.training import TrainingConfig
from kpipe.datasets.corpus import CorpusDataConfig, load_corpus
from kpipe.datasets.text_classification import TextSplits
from kpipe.errors import ConfigError
from kpipe.families.bag_of_ngrams.config import BagOfNgramsConfig
from kpipe.families.bag_of_ngrams.model import build_bag_of_ngrams
from kpipe.families.pretrained_classifier import model as pretrained_classifier
from kpipe.families.pretrained_classifier.config import PretrainedClassifierConfig
from kpipe.families.rnn_classifier.model import build_rnn_classifier, embedding_layer
from kpipe.families.transformer_classifier.config import TransformerClassifierConfig
from kpipe.families.transformer_classifier.model import build_masked_lm, build_transformer_classifier, encoder_weights
from kpipe.preprocessing.buckets import quantile_boundaries
from kpipe.preprocessing.configs import TextPreprocessingConfig
from kpipe.preprocessing.masked_lm import make_masked_lm_dataset
from kpipe.preprocessing.ngrams import (
    PairNgramFeatures,
    fit_hashed_ngram_features,
    fit_ngram_features,
    label_document_frequencies,
    make_ngram_dataset,
    nb_label_ratios,
    nb_log_count_ratios,
)
from kpipe.preprocessing.text import (
    bucket_boundaries,
    cached_vocabulary,
    counted_vocabulary,
    encode_texts,
    fit_vocabulary,
    make_text_dataset,
    make_vectorizer,
    token_lengths,
)
from kpipe.pretrained import inputs as pretrained_inputs
from kpipe.pretrained import presets
from kpipe.tasks.registry import TASKS
from kpipe.training.loop import FineTuneSchedule
from kpipe.training.run import Run
from kpipe.vectors.alignment import align_to_vocabulary
from kpipe.vectors.word_vectors import load_word_vectors

log = logging.getLogger(__name__)


@dataclasses.dataclass
class Member:
    """A trained classifier and what serving and evaluating it needs."""

    model: keras.Model
    encode: Callable[[tf.Tensor], Any]   # raw strings -> model inputs, in TF ops (traced into the export)
    dataset: Callable[[np.ndarray, np.ndarray], tf.data.Dataset]  # (texts, labels) -> batches in text order
    tracked: list                        # objects the SavedModel must keep (vectorizers, feature tables)
    vocabulary: list[str]
    history: list[dict]
    report: dict                         # family-specific figures for metrics.json
    # Recurrent models are served through XLA with their ids padded to this length (0: not compiled): a
    # BiLSTM step costs ~75 us of TensorFlow op overhead per direction on a CPU, XLA fuses the loop (see
    # ClassifierServing).
    compiled_length: int = 0
    # Raw strings -> sentence embeddings (the export's `embed` signature), for families that define one.
    embed: Callable[[tf.Tensor], tf.Tensor] | None = None
    # An ensemble member's part, naming its files in the export ("ngrams", "recurrent"); "" for the main model.
    role: str = ""
    # A pretrained encoder's WordPiece tokenizer and packer settings, for exports that run without TensorFlow.
    tokenizer_settings: dict | None = None

    def probabilities(self, texts: np.ndarray, labels: np.ndarray) -> np.ndarray:
        """(n, classes) class probabilities for `texts` (two columns for a binary sigmoid); with several labels
        per text, (n, labels) independent probabilities."""
        with warnings.catch_warnings():  # unknown-size datasets end by running out of data
            warnings.filterwarnings("ignore", message="Your input ran out of data")
            output = self.model.predict(self.dataset(texts, labels), verbose=0)
        return np.concatenate([1.0 - output, output], axis=1) if output.shape[1] == 1 else output


def train_member(run: Run, model_config, splits: TextSplits, pre: TextPreprocessingConfig, subdir: str = "",
                 training: TrainingConfig | None = None) -> Member:
    """Train the classifier `model_config` describes on `splits` (its work state in `subdir`), with
    `training` when given (an ensemble's `model.ngrams_training` or `model.recurrent_training`, or
    [training] with another seed), else [training]."""
    trainer = TASKS["classify"].trainer(model_config.family)  # one per family: the task registry's table
    return trainer(run, model_config, splits, pre, subdir, training or run.config.training)


# === Bag of n-grams ===

def train_bag_of_ngrams(run: Run, model_config: BagOfNgramsConfig, splits: TextSplits,
                        pre: TextPreprocessingConfig, subdir: str, training: TrainingConfig) -> Member:
    if model_config.weighting == "nb" and model_config.hidden_units and splits.num_classes > 2:
        raise ConfigError("model.weighting='nb' with a hidden layer needs two classes; this data has "
                          f"{splits.num_classes}: use model.hidden_units=0 or another weighting")
    started = time.perf_counter()
    # With several labels per text or pairs, one "class": its document frequencies are the n-grams' own (the
    # IDF's); a pair's vocabulary and idf are fitted on both of its texts.
    one_class = splits.multi_label or splits.pairs
    counting = splits.counting  # streamed shards: every training row, counted
    if counting is not None:
        train_texts, class_labels = counting.texts, None
    else:
        train_texts = splits.fitting.texts.reshape(-1)
        class_labels = np.zeros(len(train_texts), np.int32) if one_class else splits.fitting.labels
    if model_config.hashing:
        features, class_df = fit_hashed_ngram_features(
            train_texts, class_labels, pre, num_classes=1 if one_class else splits.num_classes,
            ngrams=model_config.ngrams, buckets=model_config.max_features, weighting=model_config.weighting,
            char_ngrams=model_config.char_ngrams, char_buckets=model_config.max_char_features)
    else:
        features, class_df = fit_ngram_features(
            train_texts, class_labels, pre, num_classes=1 if one_class else splits.num_classes,
            ngrams=model_config.ngrams, max_features=model_config.max_features, weighting=model_config.weighting,
            char_ngrams=model_config.char_ngrams, max_char_features=model_config.max_char_features,
            cache=None if counting is None else counted_cache(run, splits.scan.stamp, pre, model_config))
    ratios = None
    if model_config.weighting == "nb" and splits.multi_label:  # one ratio per n-gram and label, one-vs-rest
        ratios = nb_label_ratios(*label_document_frequencies(features, train_texts, splits.fitting.labels),
                                 alpha=model_config.nb_alpha)
    elif model_config.weighting == "nb":
        ratios = nb_log_count_ratios(class_df, alpha=model_config.nb_alpha)
    if splits.pairs:  # a block per text, then their overlap
        features = PairNgramFeatures(features)
    fit_seconds = time.perf_counter() - started
    model_config = dataclasses.replace(model_config, vocabulary_size=features.size, num_classes=splits.num_classes,
                                       multi_label=splits.multi_label)

    def dataset(texts, labels, shuffle=False):
        return make_ngram_dataset(texts, labels, features, batch_size=run.batch_of(training), shuffle=shuffle,
                                  seed=training.seed)

    model, history = run.train(lambda: build_bag_of_ngrams(model_config, ratios), subdir=subdir, config=training,
                               loss=_loss(splits), metrics=_metrics(splits),
                               train_data=dataset(*training_rows(splits, training.seed), shuffle=True),
                               validation_data=dataset(*rows_of(splits.validation)))
    return Member(model, features, dataset, [features], features.vocabulary(), history,
                  {"features": features.size, "ngrams": model_config.ngrams, "char_ngrams": model_config.char_ngrams,
                   "weighting": model_config.weighting, "hashing": model_config.hashing,
                   "feature_fit_seconds": round(fit_seconds, 2)})


# === Pretrained encoders (keras-hub presets, Hugging Face checkpoints) ===

def train_pretrained(run: Run, model_config: PretrainedClassifierConfig, splits: TextSplits,
                     pre: TextPreprocessingConfig, subdir: str, training: TrainingConfig) -> Member:
    """Fine-tune a pretrained encoder with a classification head; its own tokenizer replaces kpipe's vocabulary.

    The preset is loaded before anything else, so a missing download stops the run in seconds, with
    nothing written. `preprocessing.sequence_length` caps the tokens per text (special tokens
    included) and `preprocessing.length_buckets` groups texts of similar length.
    """
    preprocessor = pretrained_inputs.load_run_preprocessor(model_config.preset, pre)
    started = time.perf_counter()
    lengths = pretrained_inputs.token_lengths(splits.fitting.texts, preprocessor)
    tokenize_seconds = time.perf_counter() - started
    boundaries = quantile_boundaries(lengths, pre.length_buckets, pre.sequence_length)
    log.info("Pretrained encoder %s: training texts of %d tokens median, %d at the 90th percentile (cut at %d); "
             "length buckets %s", model_config.preset, np.median(lengths), np.percentile(lengths, 90),
             pre.sequence_length, boundaries or "none")
    seed = training.seed
    model_config = dataclasses.replace(model_config, num_classes=splits.num_classes, multi_label=splits.multi_label)

    def dataset(texts, labels, shuffle=False, buckets=()):
        return pretrained_inputs.make_pretrained_dataset(texts, labels, preprocessor, batch_size=run.batch_of(training),
                                                         shuffle=shuffle, seed=seed, boundaries=buckets)

    def build() -> keras.Model:  # under the run's strategy, so the backbone is loaded inside build
        return pretrained_classifier.build_pretrained_classifier(
            model_config, presets.load_backbone(model_config.preset))

    fine_tune = None
    if model_config.backbone_training == "two_phase":
        fine_tune = FineTuneSchedule(model_config.head_epochs, training.learning_rate,
                                     unfreeze=lambda model: pretrained_classifier.unfreeze_backbone(
                                         model, model_config.pooling))
        training = dataclasses.replace(training, learning_rate=model_config.head_learning_rate)
    model, history = run.train(build, subdir=subdir, loss=_loss(splits), metrics=_metrics(splits),
                               train_data=dataset(*training_rows(splits, seed), True, boundaries),
                               validation_data=dataset(*rows_of(splits.validation), buckets=boundaries),
                               fine_tune=fine_tune, config=training)
    encoder = pretrained_classifier.embedding_model(model)
    backbone = pretrained_classifier.backbone_of(model)
    return Member(model, lambda text: pretrained_inputs.encode(preprocessor, text), dataset, [preprocessor, encoder],
                  list(preprocessor.tokenizer.get_vocabulary()), history,
                  {"pretrained": {**presets.describe(model_config.preset), "backbone": type(backbone).__name__,
                                  "parameters": int(model.count_params()),
                                  "trainable_parameters": int(sum(np.prod(w.shape) for w in model.trainable_weights)),
                                  "backbone_training": model_config.backbone_training,
                                  "pooling": model_config.pooling, "length_buckets": boundaries,
                                  "token_length_median": float(np.median(lengths)),
                                  "length_seconds": round(tokenize_seconds, 2)}},
                  # A pair's vector would embed the pair, not a sentence: pair models have no `embed`
                  embed=None if splits.pairs else lambda text: encoder(pretrained_inputs.encode(preprocessor, text),
                                                                       training=False),
                  tokenizer_settings=pretrained_inputs.portable_settings(preprocessor, pre.truncating))


# === Sequence models: (Bi)LSTM/GRU and transformer encoders ===

def train_sequence_model(run: Run, model_config, splits: TextSplits, pre: TextPreprocessingConfig,
                         subdir: str, training: TrainingConfig) -> Member:
    transformer = isinstance(model_config, TransformerClassifierConfig)  # pairs: refused with the config
    pretrain_texts = None
    if transformer and model_config.pretrain_epochs:
        pretrain_texts, pretrain_source = pretraining_texts(model_config, splits)
    vectors = None
    if not transformer and model_config.pretrained_embeddings:  # loaded first, so a bad file fails in seconds
        vectors = load_word_vectors(model_config.pretrained_embeddings, expected_dim=model_config.embedding_dim)
    counting = splits.counting  # streamed shards: every training row, counted
    if counting is not None and pre.tokenizer != "wordpiece":  # cached under the scan's stamp (shards, settings)
        settings = ("counted", pre.vocabulary_size, pre.standardize, pre.split)
        vocabulary = cached_vocabulary(run.export_root / ".cache", "vocabulary", settings, [splits.scan.stamp],
                                       lambda: counted_vocabulary(counting.texts, pre))
    else:
        vocabulary = fit_vocabulary(splits.fitting.texts, pre, cache_dir=run.export_root / ".cache")
    vectorizer = make_vectorizer(pre, vocabulary)
    log.info("Vocabulary: %d tokens (fitted on the training split)", len(vocabulary))

    boundaries = bucket_boundaries(token_lengths(splits.fitting.texts, vectorizer), pre)
    if boundaries:
        log.info("Length buckets (token boundaries): %s", boundaries)
    seed = training.seed

    def dataset(texts, labels, shuffle=False, buckets=()):
        return make_text_dataset(texts, labels, vectorizer, pre, batch_size=run.batch_of(training), shuffle=shuffle,
                                 seed=seed, boundaries=buckets)

    train_ds = dataset(*training_rows(splits, seed), shuffle=True, buckets=boundaries)
    val_ds = dataset(*rows_of(splits.validation), buckets=boundaries)

    model_config = dataclasses.replace(model_config, vocabulary_size=len(vocabulary), num_classes=splits.num_classes,
                                       multi_label=splits.multi_label,
                                       **({"sequence_length": pre.sequence_length} if transformer
                                          else {"text_pairs": splits.pairs}))
    pretrained, coverage = None, None
    if vectors is not None:
        pretrained, coverage = align_to_vocabulary(vectors, vocabulary, seed=seed)

    fine_tune = None
    if not transformer and model_config.embedding_training == "two_phase":
        fine_tune = FineTuneSchedule(model_config.frozen_epochs, model_config.fine_tune_learning_rate,
                                     unfreeze=lambda model: setattr(embedding_layer(model), "trainable", True))

    pretrained_encoder, pretraining = {}, None
    if pretrain_texts is not None:
        pretrained_encoder, pretraining = pretrain_encoder(run, pretrain_texts, splits.validation.texts, vectorizer,
                                                           pre, model_config, subdir)
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
            # model's JSON config (and every .keras file). A restored checkpoint overrides it on resume.
            embedding_layer(model).embeddings.assign(pretrained)
        return model

    model, history = run.train(build, subdir=subdir, config=training, loss=_loss(splits), metrics=_metrics(splits),
                               train_data=train_ds, validation_data=val_ds, fine_tune=fine_tune)
    return Member(model, lambda text: encode_texts(vectorizer, text, pre), dataset, [vectorizer], vocabulary,
                  history, {"vocabulary_size": len(vocabulary),
                            "embedding_coverage": coverage.as_dict() if coverage else None,
                            "masked_lm_pretraining": pretraining},
                  compiled_length=0 if transformer else pre.sequence_length,
                  # kpipe's own WordPiece ids, cut and right-padded, no [CLS]/[SEP] (the model adds its [CLS])
                  tokenizer_settings=pretrained_inputs.wordpiece_settings(
                      vectorizer, {"sequence_length": pre.sequence_length, "start_value": [], "end_value": [],
                                   "pad_value": 0}, pre.truncating) if pre.tokenizer == "wordpiece" else None)


def counted_cache(run: Run, stamp: str, pre: TextPreprocessingConfig, model_config: BagOfNgramsConfig) -> Path:
    """Where n-gram tables counted over streamed shards are kept: named after the scan (the shards and the data
    settings) and everything the tables depend on, so the next run on the same shards reads them."""
    settings = (stamp, pre.standardize, pre.split, model_config.ngrams, model_config.max_features,
                model_config.char_ngrams, model_config.max_char_features)
    return run.export_root / ".cache" / f"ngrams-{hashlib.sha256(repr(settings).encode()).hexdigest()[:16]}.npz"


def training_rows(splits: TextSplits, seed: int) -> tuple:
    """The training split as a member's `dataset` takes it: (texts, labels) arrays, or for streamed shards a
    stream of rows shuffled by `seed` (and no labels: they travel with the rows)."""
    return (splits.train.shuffled(seed), None) if splits.streamed else (splits.train.texts, splits.train.labels)


def rows_of(examples) -> tuple:
    """(texts, labels) of an evaluation split: arrays, or a stream of rows (labels travel with the rows)."""
    from kpipe.datasets.streamed_text import StreamedExamples

    return (examples.texts, None) if isinstance(examples, StreamedExamples) else (examples.texts, examples.labels)


def _loss(splits: TextSplits) -> str:
    """Binary cross-entropy for two classes and for several labels per text (one per label), else softmax's."""
    return ("binary_crossentropy" if splits.num_classes == 2 or splits.multi_label
            else "sparse_categorical_crossentropy")


def _metrics(splits: TextSplits) -> list:
    """What every epoch reports: accuracy, or with several labels per text micro F1 at a 0.5 threshold (what
    early stopping and `kpipe tune` watch there; "accuracy" would be Keras' argmax match, which means nothing
    for label sets)."""
    if not splits.multi_label:
        return ["accuracy"]
    return [keras.metrics.F1Score(average="micro", threshold=0.5, name="micro_f1")]


def pretraining_texts(model_config: TransformerClassifierConfig, splits: TextSplits) -> tuple[np.ndarray, str]:
    """The unlabeled texts the masked-LM pretraining reads, and where they come from.

    Loaded before any training, so a missing corpus file fails in seconds, not after the vocabulary.
    """
    corpus = model_config.pretrain_corpus
    if not corpus:
        return splits.fitting.texts, f"the {len(splits.fitting)} training texts"
    source = "embedded" if corpus == "world-english-bible" else "file"
    lines = load_corpus(CorpusDataConfig(source=source, name=corpus if source == "embedded" else "",
                                         path=corpus if source == "file" else ""))
    return np.array(lines, dtype=object), f"{len(lines)} lines of {corpus}"


def pretrain_encoder(run: Run, texts: np.ndarray, validation_texts: np.ndarray, vectorizer,
                     pre: TextPreprocessingConfig, model_config: TransformerClassifierConfig,
                     subdir: str = "") -> tuple[dict[str, list], dict]:
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
        lambda: build_masked_lm(model_config), subdir=f"{subdir}/masked_lm" if subdir else "masked_lm",
        # Averaged over the masked positions only: the fixed-size position list is padded (weight 0)
        # for short texts, and those slots must count neither in the loss nor in the accuracy.
        loss=keras.losses.SparseCategoricalCrossentropy(reduction="mean_with_sample_weight"),
        metrics=[], weighted_metrics=["sparse_categorical_accuracy"], train_data=dataset(texts, True),
        validation_data=dataset(validation_texts, False) if len(validation_texts) else None,
        config=dataclasses.replace(run.config.training, epochs=model_config.pretrain_epochs))
    report = {"epochs": len(history), "seconds": round(time.perf_counter() - started, 2), "history": history}
    return encoder_weights(masked_lm), report

