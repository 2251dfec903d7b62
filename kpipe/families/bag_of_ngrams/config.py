"""The `bag_of_ngrams` family's config, without TensorFlow (parsed and checked before TensorFlow loads)."""

from __future__ import annotations

import dataclasses

from kpipe.config.constraints import Checked, above, at_least, between, fraction, one_of, setting

NGRAM_WEIGHTINGS = ("tfidf", "binary", "nb")


@dataclasses.dataclass(frozen=True, kw_only=True)
class BagOfNgramsConfig(Checked):
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

    family: str = setting("bag_of_ngrams", one_of(("bag_of_ngrams",)))
    ngrams: int = setting(2, between(1, 3))
    max_features: int = setting(200000, at_least(2))
    char_ngrams: int = setting(0, between(0, 8))
    max_char_features: int = setting(200000, at_least(2))
    hashing: bool = False
    weighting: str = setting("nb", one_of(NGRAM_WEIGHTINGS))
    nb_alpha: float = setting(1.0, above(0.0))
    hidden_units: int = setting(0, at_least(0))
    dropout: float = setting(0.0, fraction())
    l2: float = setting(0.0, at_least(0.0))
    vocabulary_size: int = setting(200000, at_least(2), derived=True)
    num_classes: int = setting(2, at_least(2), derived=True)
    multi_label: bool = setting(False, derived=True)  # one sigmoid per label (set by kpipe)
