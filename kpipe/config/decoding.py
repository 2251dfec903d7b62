"""The decoding settings both translator families share (one copy, not one per family), without TensorFlow."""

from __future__ import annotations

import dataclasses

from kpipe.config.constraints import Checked, at_least, setting


@dataclasses.dataclass(frozen=True, kw_only=True)
class DecodingSettings(Checked):
    """How a translator decodes, and which weights and members it keeps.

    Args:
        beam_width: 1 = greedy decoding; more = beam search with this many hypotheses.
        length_penalty: beam scores are log-probability / length**length_penalty (0 = none).
        average_epochs: 1 = keep the best epoch's weights; N >= 2: also average the weights of the N
            epochs ending at the best one, and keep the average if it decodes the validation split
            with a lower word error rate (the report says which was kept).
        ensemble_members: 1 = one model; N >= 2: train N models with seeds `training.seed`,
            `training.seed + 1`, ..., then keep the ensemble of the k best (k = 1..N, ranked by
            validation WER) that decodes the validation split best; they decode together (next-token
            log-probabilities summed, greedy or beam) in one SavedModel.
    """

    beam_width: int = setting(1, at_least(1))
    length_penalty: float = setting(1.0, at_least(0.0))
    average_epochs: int = setting(1, at_least(1))
    ensemble_members: int = setting(1, at_least(1))
