"""The `seq2seq_attention` family's config, without TensorFlow (parsed and checked before TensorFlow loads)."""

from __future__ import annotations

import dataclasses

from kpipe.config.strict import DERIVED, check_choice, check_range
from kpipe.layers.settings import CELL_CLASSES
from kpipe.tokens import SEQ2SEQ


@dataclasses.dataclass(frozen=True, kw_only=True)
class Seq2SeqConfig:
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

    family: str = "seq2seq_attention"
    embedding_dim: int = 64
    cell: str = "gru"
    encoder_units: int = 128
    decoder_units: int = 256
    attention_units: int = 128
    dropout: float = 0.1
    beam_width: int = 1
    length_penalty: float = 1.0
    average_epochs: int = 1
    ensemble_members: int = 1
    source_vocabulary_size: int = dataclasses.field(default=64, metadata=DERIVED)
    target_vocabulary_size: int = dataclasses.field(default=64, metadata=DERIVED)

    def __post_init__(self):
        check_choice("family", self.family, ("seq2seq_attention",))
        for name in ("embedding_dim", "encoder_units", "decoder_units", "attention_units", "beam_width",
                     "average_epochs", "ensemble_members"):
            check_range(name, getattr(self, name), low=1)
        check_choice("cell", self.cell, CELL_CLASSES)
        check_range("dropout", self.dropout, low=0.0, high=1.0, high_inclusive=False)
        check_range("length_penalty", self.length_penalty, low=0.0)
        check_range("source_vocabulary_size", self.source_vocabulary_size, low=SEQ2SEQ.count + 1)
        check_range("target_vocabulary_size", self.target_vocabulary_size, low=SEQ2SEQ.count + 1)
