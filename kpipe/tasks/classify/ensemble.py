"""Ensembles: members trained one after the other on the same split, their probabilities averaged with the
weights that score best on validation.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Sequence

import numpy as np

from kpipe.config.pipeline import PipelineConfig
from kpipe.datasets.text_classification import TextSplits
from kpipe.evaluation.multi_label import choose_thresholds, multi_label_metrics
from kpipe.families.pretrained_classifier.config import pretrained_preset
from kpipe.pretrained import presets
from kpipe.tasks.classify.members import Member, train_member
from kpipe.training.run import Run

log = logging.getLogger(__name__)


ENSEMBLE_WEIGHTS = np.round(np.linspace(0.0, 1.0, 21), 2)  # n-gram shares tried on validation


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
