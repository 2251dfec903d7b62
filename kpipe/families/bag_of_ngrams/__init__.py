"""The `bag_of_ngrams` model family: word / character n-gram features (TF-IDF, binary, NB) -> linear head.
`config.py` holds its config (no TensorFlow), `model.py` its Keras builder; `SPEC` below is what the task registry
lists."""

from kpipe.families.bag_of_ngrams.config import BagOfNgramsConfig
from kpipe.families.spec import FamilySpec

SPEC = FamilySpec(
    "bag_of_ngrams",
    config=BagOfNgramsConfig,
    builder="kpipe.families.bag_of_ngrams.model:build_bag_of_ngrams",
    summary="word / character n-gram features (TF-IDF, binary, NB) -> linear head",
    portable=True,
    shards=True,
)
