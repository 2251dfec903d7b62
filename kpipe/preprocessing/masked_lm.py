"""Masked-LM batches from raw texts: keras-hub's `MaskedLMMaskGenerator` on the classifier's token ids.

Each batch hides `mask_rate` of the real tokens (80% become [MASK], 10% a random token, 10% stay,
as in BERT); the model predicts the original ids at those positions, weighted so padding slots of
the fixed-size position list do not count.
"""

from __future__ import annotations

import math

import numpy as np
import tensorflow as tf

from kpipe.tokens import WORDPIECE_MASK, WORDPIECE_RESERVED
from kpipe.preprocessing.configs import TextPreprocessingConfig
from kpipe.preprocessing.text import pad_batch, truncate, vectorize
from kpipe.preprocessing.prefetch import prefetched


def make_masked_lm_dataset(texts: np.ndarray, vectorizer, config: TextPreprocessingConfig, *, vocabulary_size: int,
                           mask_rate: float, batch_size: int, shuffle: bool = False, seed: int = 0) -> tf.data.Dataset:
    """Batches of ({"token_ids", "mask_positions"}, masked ids, weights)."""
    import keras_hub

    generator = keras_hub.layers.MaskedLMMaskGenerator(
        vocabulary_size=vocabulary_size, mask_selection_rate=mask_rate, mask_token_id=WORDPIECE_MASK,
        mask_selection_length=max(1, math.ceil(config.sequence_length * mask_rate)),
        unselectable_token_ids=list(range(len(WORDPIECE_RESERVED))))  # never mask padding, [CLS], ...
    ds = tf.data.Dataset.from_tensor_slices(tf.constant(list(texts), tf.string))
    if shuffle:
        ds = ds.shuffle(len(texts), seed=seed, reshuffle_each_iteration=True)

    def mask(batch):
        masked = generator(truncate(vectorize(vectorizer, batch), config.sequence_length, config.truncating))
        inputs = {"token_ids": pad_batch(masked["token_ids"]),
                  "mask_positions": tf.cast(masked["mask_positions"], tf.int32)}
        return inputs, masked["mask_ids"], masked["mask_weights"]

    return prefetched(ds.batch(batch_size).map(mask, num_parallel_calls=tf.data.AUTOTUNE))
