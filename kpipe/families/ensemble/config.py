"""The `ensemble` family's config, without TensorFlow (parsed and checked before TensorFlow loads)."""

from __future__ import annotations

import dataclasses

from kpipe.config.constraints import Checked, at_least, between, one_of, or_auto, setting
from kpipe.config.training import TrainingConfig
from kpipe.errors import ConfigError
from kpipe.families.bag_of_ngrams.config import BagOfNgramsConfig
from kpipe.families.pretrained_classifier.config import PretrainedClassifierConfig
from kpipe.families.rnn_classifier.config import RNNClassifierConfig
from kpipe.preprocessing.configs import TextPreprocessingConfig


@dataclasses.dataclass(frozen=True, kw_only=True)
class EnsembleClassifierConfig(Checked):
    """Several views of the text in one exported model: a bag-of-n-grams classifier, a sequence
    classifier (recurrent, or a pretrained encoder) and optionally a recurrent third member, trained one
    after the other on the same split, their probabilities averaged with the weights that score best on
    the validation split.

    Args:
        family: always "ensemble".
        ngrams: the n-gram member ([model.ngrams] in TOML).
        sequence: the sequence member ([model.sequence]): a recurrent classifier, or a pretrained encoder
            with `family = "pretrained_classifier"`.
        ngram_weight: the n-gram member's share of the average; -1 chooses it on validation
            (0, 0.05, ..., 1).
        sequence_members: how many sequence members to train, with seeds `training.seed`,
            `training.seed + 1`, ...; they share the rest of the average equally. (On the tweets, two
            MiniLM encoders did not beat one on validation: see sentiment-minilm-ensemble.toml.)
        ngrams_training: how the n-gram member trains ([model.ngrams_training], a whole training
            table: keys left out take the training defaults, not [training]'s), when it should train
            unlike the sequence member: a pretrained encoder fine-tunes at 5e-5 for a few epochs, far
            too little for a bag of n-grams learned from zero. Unset: both follow [training]. Its strategy,
            worker timeout and refit must be [training]'s (they belong to the run).
        recurrent: an optional third member ([model.recurrent]), a recurrent classifier beside a
            pretrained encoder: e.g. sentiment-bilstm's GloVe BiLSTM, which reads the text as words
            where the encoder reads word pieces.
        recurrent_training: its training table ([model.recurrent_training], as ngrams_training).
        recurrent_preprocessing: its words ([model.recurrent_preprocessing], a whole preprocessing
            table); unset: [preprocessing].
        recurrent_weight: its share of the average; -1 chooses it on validation, jointly with
            ngram_weight (a grid of shares 0, 0.05, ..., 1 that sum to at most 1).
    """

    family: str = setting("ensemble", one_of(("ensemble",)))
    ngrams: BagOfNgramsConfig = BagOfNgramsConfig()
    sequence: RNNClassifierConfig | PretrainedClassifierConfig = RNNClassifierConfig()
    ngram_weight: float = setting(-1.0, or_auto(-1.0, between(0.0, 1.0), "chosen on validation"))
    sequence_members: int = setting(1, at_least(1))
    ngrams_training: TrainingConfig | None = None
    recurrent: RNNClassifierConfig | None = None
    recurrent_training: TrainingConfig | None = None
    recurrent_preprocessing: TextPreprocessingConfig | None = None
    recurrent_weight: float = setting(-1.0, or_auto(-1.0, between(0.0, 1.0), "chosen on validation"))

    def __post_init__(self):
        super().__post_init__()
        if self.recurrent is None:
            for key in ("recurrent_training", "recurrent_preprocessing"):
                if getattr(self, key) is not None:
                    raise ConfigError(f"model.{key} is set but there is no [model.recurrent] member to use it; "
                                      f"add a [model.recurrent] table or remove model.{key}")
            if self.recurrent_weight != -1.0:
                raise ConfigError("model.recurrent_weight is set but there is no [model.recurrent] member; add a "
                                  "[model.recurrent] table or remove model.recurrent_weight")
        elif self.recurrent_weight != -1.0:
            if self.ngram_weight != -1.0 and self.ngram_weight + self.recurrent_weight > 1.0:
                raise ConfigError(f"model.ngram_weight + model.recurrent_weight = "
                                  f"{self.ngram_weight + self.recurrent_weight:g} > 1; the sequence member gets what "
                                  "they leave, so make their sum at most 1")
