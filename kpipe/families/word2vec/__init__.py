"""The `word2vec` model family: skip-gram word vectors with negative sampling (Keras, or sparse SGD). `config.py`
holds its config (no TensorFlow), `model.py` its Keras builder; `SKIPGRAM, CBOW` below is what the task registry
lists."""

from kpipe.families.spec import FamilySpec
from kpipe.families.word2vec.config import Word2VecConfig

SKIPGRAM = FamilySpec(
    "skipgram",
    config=Word2VecConfig,
    builder="kpipe.families.word2vec.model:build_skipgram",
    summary="skip-gram word vectors with negative sampling (Keras, or sparse SGD)",
    portable=True,
)
CBOW = FamilySpec(
    "cbow",
    config=Word2VecConfig,
    builder="kpipe.families.word2vec.model:build_cbow",
    summary="CBOW word vectors with negative sampling",
    portable=True,
)
