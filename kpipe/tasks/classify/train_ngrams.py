"""The bag_of_ngrams family's trainer: n-gram tables fitted on the training split (or counted over streamed shards,
and cached), then a linear head (with naive-Bayes ratios for `weighting = "nb"`) -> a `Member`."""

from __future__ import annotations

import dataclasses
import hashlib
import time
from pathlib import Path

import numpy as np

from kpipe.config.training import TrainingConfig
from kpipe.datasets.text_classification import TextSplits
from kpipe.errors import ConfigError
from kpipe.families.bag_of_ngrams.config import BagOfNgramsConfig
from kpipe.families.bag_of_ngrams.model import build_bag_of_ngrams
from kpipe.preprocessing.configs import TextPreprocessingConfig
from kpipe.preprocessing.ngrams import (
    PairNgramFeatures,
    fit_hashed_ngram_features,
    fit_ngram_features,
    label_document_frequencies,
    make_ngram_dataset,
    nb_label_ratios,
    nb_log_count_ratios,
)
from kpipe.tasks.classify.members import Member, epoch_metrics, loss_for, rows_of, training_rows
from kpipe.training.run import Run

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
                               loss=loss_for(splits), metrics=epoch_metrics(splits),
                               train_data=dataset(*training_rows(splits, training.seed), shuffle=True),
                               validation_data=dataset(*rows_of(splits.validation)))
    return Member(model, features, dataset, [features], features.vocabulary(), history,
                  {"features": features.size, "ngrams": model_config.ngrams, "char_ngrams": model_config.char_ngrams,
                   "weighting": model_config.weighting, "hashing": model_config.hashing,
                   "feature_fit_seconds": round(fit_seconds, 2)})


def counted_cache(run: Run, stamp: str, pre: TextPreprocessingConfig, model_config: BagOfNgramsConfig) -> Path:
    """Where n-gram tables counted over streamed shards are kept: named after the scan (the shards and the data
    settings) and everything the tables depend on, so the next run on the same shards reads them."""
    settings = (stamp, pre.standardize, pre.split, model_config.ngrams, model_config.max_features,
                model_config.char_ngrams, model_config.max_char_features)
    return run.export_root / ".cache" / f"ngrams-{hashlib.sha256(repr(settings).encode()).hexdigest()[:16]}.npz"
