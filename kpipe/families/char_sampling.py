"""Sampling the next character, in the graph, shared by both name generator families (char_rnn's `CharSampler`,
char_transformer's sampler); the reserved character ids are `kpipe.tokens.CHARS`. The portable exports' NumPy twin
is `kpipe.portable.generator.sample_next`."""

from __future__ import annotations

import tensorflow as tf

from kpipe.tokens import CHARS

PAD, START, END, UNKNOWN, SPECIAL_TOKENS = CHARS.pad, CHARS.start, CHARS.end, CHARS.unknown, CHARS.count


def sample_next(logits: tf.Tensor, temperature: tf.Tensor, top_k: tf.Tensor, seed: tf.Tensor) -> tf.Tensor:
    """One id per row of next-character `logits` (batch, vocabulary): softmax at `temperature`, among the
    `top_k` most likely (0 = all), never padding, START or UNKNOWN; `seed` is a stateless pair."""
    vocabulary = tf.shape(logits)[-1]
    banned = tf.reduce_any(tf.range(vocabulary)[None, :, None] == tf.constant(CHARS.never_emitted), axis=-1)
    scaled = tf.where(banned, tf.constant(-1e9, logits.dtype), logits / tf.cast(temperature, logits.dtype))
    k = tf.where(top_k > 0, tf.minimum(top_k, vocabulary), vocabulary)
    kth = tf.math.top_k(scaled, k=k).values[:, -1:]
    scaled = tf.where(scaled < kth, tf.constant(-1e9, scaled.dtype), scaled)
    return tf.random.stateless_categorical(scaled, 1, seed=seed, dtype=tf.int32)[:, 0]
