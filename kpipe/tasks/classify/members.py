"""How each classifier family turns the training split into a trained model: a `Member`.

A member is one trained model with the function that turns raw strings into its inputs (token ids
for sequence models, sparse n-gram features for bag-of-n-grams), so the classify task can evaluate,
ensemble and export any of them the same way.
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any, Callable

import keras
import numpy as np
import tensorflow as tf

from kpipe.config.training import TrainingConfig
from kpipe.datasets.text_classification import TextSplits
from kpipe.preprocessing.configs import TextPreprocessingConfig
from kpipe.tasks.registry import TASKS
from kpipe.training.run import Run

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


def training_rows(splits: TextSplits, seed: int) -> tuple:
    """The training split as a member's `dataset` takes it: (texts, labels) arrays, or for streamed shards a
    stream of rows shuffled by `seed` (and no labels: they travel with the rows)."""
    return (splits.train.shuffled(seed), None) if splits.streamed else (splits.train.texts, splits.train.labels)


def rows_of(examples) -> tuple:
    """(texts, labels) of an evaluation split: arrays, or a stream of rows (labels travel with the rows)."""
    from kpipe.datasets.streamed_text import StreamedExamples

    return (examples.texts, None) if isinstance(examples, StreamedExamples) else (examples.texts, examples.labels)


def loss_for(splits: TextSplits) -> str:
    """Binary cross-entropy for two classes and for several labels per text (one per label), else softmax's."""
    return ("binary_crossentropy" if splits.num_classes == 2 or splits.multi_label
            else "sparse_categorical_crossentropy")


def epoch_metrics(splits: TextSplits) -> list:
    """What every epoch reports: accuracy, or with several labels per text micro F1 at a 0.5 threshold (what
    early stopping and `kpipe tune` watch there; "accuracy" would be Keras' argmax match, which means nothing
    for label sets)."""
    if not splits.multi_label:
        return ["accuracy"]
    return [keras.metrics.F1Score(average="micro", threshold=0.5, name="micro_f1")]
