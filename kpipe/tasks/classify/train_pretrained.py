"""The pretrained_classifier family's trainer: a keras-hub encoder (a preset or a Hugging Face folder) fine-tuned
with a head, in one or two phases -> a `Member`."""

from __future__ import annotations

import dataclasses
import logging
import time

import keras
import numpy as np

from kpipe.config.training import TrainingConfig
from kpipe.datasets.text_classification import TextSplits
from kpipe.families.pretrained_classifier import model as pretrained_classifier
from kpipe.families.pretrained_classifier.config import PretrainedClassifierConfig
from kpipe.preprocessing.buckets import quantile_boundaries
from kpipe.preprocessing.configs import TextPreprocessingConfig
from kpipe.pretrained import inputs as pretrained_inputs
from kpipe.pretrained import presets
from kpipe.tasks.classify.members import Member, epoch_metrics, loss_for, rows_of, training_rows
from kpipe.training.loop import FineTuneSchedule
from kpipe.training.run import Run

log = logging.getLogger(__name__)


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
    model, history = run.train(build, subdir=subdir, loss=loss_for(splits), metrics=epoch_metrics(splits),
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
