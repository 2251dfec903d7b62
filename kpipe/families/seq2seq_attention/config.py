"""The `seq2seq_attention` family's config, without TensorFlow (parsed and checked before TensorFlow loads)."""

from __future__ import annotations

import dataclasses

from kpipe.config.constraints import Checked, at_least, fraction, one_of, setting
from kpipe.layers.settings import CELL_CLASSES
from kpipe.tokens import SEQ2SEQ


@dataclasses.dataclass(frozen=True, kw_only=True)
class Seq2SeqConfig(Checked):
    """Hyperparameters of `build_seq2seq`.

    Args:
        family: always "seq2seq_attention".
        embedding_dim: size of the source and target token embeddings.
        cell: "gru" or "lstm" (encoder and decoder).
        encoder_units: units per direction of the bidirectional encoder.
        decoder_units: units of the decoder.
        attention_units: size of the additive attention's hidden layer (W₁, W₂, v).
        dropout: dropout on the embeddings and before the output layer.
        beam_width: 1 = greedy decoding; more = beam search with this many hypotheses.
        length_penalty: beam scores are log-probability / length**length_penalty (0 = none).
        average_epochs: 1 = keep the best epoch's weights; N >= 2: also average the weights of the N
            epochs ending at the best one, and keep the average if it decodes the validation split
            with a lower word error rate (the report says which was kept).
        ensemble_members: 1 = one model; N >= 2: train N models with seeds `training.seed`,
            `training.seed + 1`, ..., then keep the ensemble of the k best (k = 1..N, ranked by
            validation WER) that decodes the validation split best; they decode together (next-token
            log-probabilities summed, greedy or beam) in one SavedModel.
        source_vocabulary_size, target_vocabulary_size: set by kpipe from the training split.
    """

    family: str = setting("seq2seq_attention", one_of(("seq2seq_attention",)))
    embedding_dim: int = setting(64, at_least(1))
    cell: str = setting("gru", one_of(CELL_CLASSES))
    encoder_units: int = setting(128, at_least(1))
    decoder_units: int = setting(256, at_least(1))
    attention_units: int = setting(128, at_least(1))
    dropout: float = setting(0.1, fraction())
    beam_width: int = setting(1, at_least(1))
    length_penalty: float = setting(1.0, at_least(0.0))
    average_epochs: int = setting(1, at_least(1))
    ensemble_members: int = setting(1, at_least(1))
    source_vocabulary_size: int = setting(64, at_least(SEQ2SEQ.count + 1), derived=True)
    target_vocabulary_size: int = setting(64, at_least(SEQ2SEQ.count + 1), derived=True)
