"""The `bag_of_ngrams` family's config, without TensorFlow (parsed and checked before TensorFlow loads)."""

from __future__ import annotations

import dataclasses

from kpipe.config.strict import DERIVED, check_choice, check_range

NGRAM_WEIGHTINGS = ("tfidf", "binary", "nb")


@dataclasses.dataclass(frozen=True, kw_only=True)
class BagOfNgramsConfig:
    """Hyperparameters of `build_bag_of_ngrams`: a linear or one-hidden-layer classifier on n-gram features.

    Args:
        family: always "bag_of_ngrams".
        ngrams: word n-grams up to this length (1 = words, 2 = words and word pairs, 3 adds triples).
        max_features: keep the this many most frequent n-grams of the training split (the
            words are standardized and split as `preprocessing` says; its vocabulary_size and
            sequence_length are for sequence models: n-gram models read whole texts).
        char_ngrams: 0 for words only; N adds character 1- to N-grams of the lower-cased texts,
            punctuation kept (emoticons, "!!", hashtags, misspellings: worth it on short texts).
        max_char_features: keep this many most frequent character n-grams.
        hashing: no vocabulary: each n-gram counts in one of `max_features` (characters: `max_char_features`)
            columns picked by a hash of it, so nothing is fitted but the idf (one pass): for data too large to
            count, at the price of colliding n-grams sharing a column. `kpipe export` does not take these models.
        weighting: "tfidf" (sublinear term frequency x smooth idf, rows scaled to unit length),
            "binary" (1 per n-gram present) or "nb" (binary scaled by naive-Bayes log-count ratios,
            NBSVM-style; with more than two classes, one ratio per class against the rest).
        nb_alpha: the smoothing count of the naive-Bayes ratios.
        hidden_units: 0 for a linear model, else one hidden relu layer of this size.
        dropout: after the hidden layer.
        l2: L2 penalty on the dense kernels (0 = none).
        vocabulary_size: number of n-gram features (set by kpipe from the fitted vocabulary).
        num_classes: number of classes (set by kpipe from the data); 2 gives one sigmoid unit.
    """

    family: str = "bag_of_ngrams"
    ngrams: int = 2
    max_features: int = 200000
    char_ngrams: int = 0
    max_char_features: int = 200000
    hashing: bool = False
    weighting: str = "nb"
    nb_alpha: float = 1.0
    hidden_units: int = 0
    dropout: float = 0.0
    l2: float = 0.0
    vocabulary_size: int = dataclasses.field(default=200000, metadata=DERIVED)
    num_classes: int = dataclasses.field(default=2, metadata=DERIVED)
    multi_label: bool = dataclasses.field(default=False, metadata=DERIVED)  # one sigmoid per label (set by kpipe)

    def __post_init__(self):
        check_choice("family", self.family, ("bag_of_ngrams",))
        check_range("ngrams", self.ngrams, low=1, high=3)
        check_range("max_features", self.max_features, low=2)
        check_range("char_ngrams", self.char_ngrams, low=0, high=8)
        check_range("max_char_features", self.max_char_features, low=2)
        check_choice("weighting", self.weighting, NGRAM_WEIGHTINGS)
        check_range("nb_alpha", self.nb_alpha, low=0.0, low_inclusive=False)
        check_range("hidden_units", self.hidden_units, low=0)
        check_range("dropout", self.dropout, low=0.0, high=1.0, high_inclusive=False)
        check_range("l2", self.l2, low=0.0)
        check_range("vocabulary_size", self.vocabulary_size, low=2)
        check_range("num_classes", self.num_classes, low=2)
