"""The sequence classifiers' trainer (rnn_classifier and transformer_classifier: token ids -> a model), with the
transformer's optional masked-LM pretraining -> a `Member`."""

from __future__ import annotations

import dataclasses
import logging
import time

import keras
import numpy as np

from kpipe.config.training import TrainingConfig
from kpipe.datasets.corpus import CorpusDataConfig, load_corpus
from kpipe.datasets.text_classification import TextSplits
from kpipe.families.rnn_classifier.model import build_rnn_classifier, embedding_layer
from kpipe.families.transformer_classifier.config import TransformerClassifierConfig
from kpipe.families.transformer_classifier.model import build_masked_lm, build_transformer_classifier, encoder_weights
from kpipe.preprocessing.configs import TextPreprocessingConfig
from kpipe.preprocessing.masked_lm import make_masked_lm_dataset
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
from kpipe.tasks.classify.members import Member, epoch_metrics, loss_for, rows_of, training_rows
from kpipe.training.loop import FineTuneSchedule
from kpipe.training.run import Run
from kpipe.vectors.alignment import align_to_vocabulary
from kpipe.vectors.word_vectors import load_word_vectors

log = logging.getLogger(__name__)


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

    model, history = run.train(build, subdir=subdir, config=training, loss=loss_for(splits), metrics=epoch_metrics(splits),
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
