"""Batched greedy and beam-search decoding for translation models, in graph mode, shared by both translator
families over one small protocol (`Decoder`: `encode`, `step` and an `output` layer).

Both run the trained layer objects (`Seq2SeqParts` of seq2seq_attention, `TransformerParts` of
seq2seq_transformer) one target step at a time inside a
`tf.while_loop` (AutoGraph) for the whole batch, stop when every row has produced the end token
(or after `max_length` steps), and return the ids (batch, max_length), padded with 0 after the
end token, and the attention weights (batch, max_length, source_steps).
"""

from __future__ import annotations

from typing import Any, Protocol, Sequence

import tensorflow as tf

from kpipe.tokens import SEQ2SEQ

PAD, START, END = SEQ2SEQ.pad, SEQ2SEQ.start, SEQ2SEQ.end

NEG_INF = -1e9


class Decoder(Protocol):
    """What decoding needs of a translator's trained layers."""

    output: Any  # the output Dense layer: its `units` is the target vocabulary

    def encode(self, source: tf.Tensor) -> tuple:
        """(batch, source steps) ids -> (encoder outputs, source mask, the decoder's first states)."""

    def step(self, tokens: tf.Tensor, states: Any, encoder_outputs: tf.Tensor, source_mask: tf.Tensor) -> tuple:
        """One target token per row -> (next-token probabilities, new states, attention weights)."""


def _never_emit(vocabulary_size: int) -> tf.Tensor:
    # Padding, unknown and start are never outputs (training never targets them).
    banned = tf.constant(SEQ2SEQ.never_emitted)
    return tf.scatter_nd(banned[:, None], tf.fill([len(SEQ2SEQ.never_emitted)], NEG_INF), [vocabulary_size])


def _same_shape(new: tf.Tensor, old: tf.Tensor) -> tf.Tensor:
    return tf.ensure_shape(new, old.shape)


def _members(parts: Decoder | Sequence[Decoder]) -> list[Decoder]:
    return [parts] if hasattr(parts, "step") else list(parts)


def greedy_decode(parts: Decoder | Sequence[Decoder], source: tf.Tensor,
                  max_length: int) -> tuple[tf.Tensor, tf.Tensor]:
    """The most likely next token at every step, for a batch of right-padded source ids.

    Given several models trained on the same vocabularies (an ensemble), the next token is the argmax of
    their summed log-probabilities, and the attention returned is the first model's.
    """
    members = _members(parts)
    encoded = [member.encode(source) for member in members]
    states = [member_states for _, _, member_states in encoded]
    batch, source_steps = tf.shape(source)[0], tf.shape(source)[1]
    penalty = _never_emit(members[0].output.units)
    tokens = tf.fill([batch], START)
    finished = tf.zeros([batch], tf.bool)
    ids = tf.zeros([batch, max_length], tf.int32)
    attention = tf.zeros([batch, max_length, source_steps])
    for step in tf.range(max_length):
        log_probabilities, next_states, first_weights = penalty, [], None
        for member, (encoder_outputs, mask, _), member_states in zip(members, encoded, states):
            probabilities, member_states, weights = member.step(tokens, member_states, encoder_outputs, mask)
            log_probabilities += tf.math.log(probabilities + 1e-12)
            next_states.append(member_states)
            first_weights = weights if first_weights is None else first_weights
        states = next_states
        best = tf.argmax(log_probabilities, axis=-1, output_type=tf.int32)
        best = tf.where(finished, PAD, best)
        at_step = tf.one_hot(step, max_length)
        ids += best[:, None] * tf.cast(at_step, tf.int32)[None, :]
        attention += tf.cast(first_weights, tf.float32)[:, None, :] * at_step[None, :, None] * tf.cast(
            ~finished, tf.float32)[:, None, None]
        finished |= best == END
        tokens = best
        if tf.reduce_all(finished):
            break
    return ids, attention


def beam_decode(parts: Decoder | Sequence[Decoder], source: tf.Tensor, max_length: int, beam_width: int,
                length_penalty: float = 1.0) -> tuple[tf.Tensor, tf.Tensor]:
    """Beam search: keep the `beam_width` best partial outputs per row by summed log-probability;
    the result is the finished hypothesis with the best log-probability / length**length_penalty.

    Given several models (an ensemble), a hypothesis' score sums every model's log-probabilities, each
    model keeps its own decoder states per hypothesis, and the attention returned is the first model's.
    """
    k = beam_width
    members = _members(parts)
    batch, source_steps = tf.shape(source)[0], tf.shape(source)[1]
    vocabulary = members[0].output.units
    # Every hypothesis gets its own copy of its row's encoder outputs: row-major (batch * k).
    encoded, states = [], []
    for member in members:
        encoder_outputs, mask, member_states = member.encode(source)
        encoded.append((tf.repeat(encoder_outputs, k, axis=0), tf.repeat(mask, k, axis=0)))
        states.append([tf.repeat(s, k, axis=0) for s in member_states])
    penalty = _never_emit(vocabulary)
    # A finished hypothesis can only be extended by padding, at no cost.
    finished_row = tf.where(tf.range(vocabulary) == PAD, 0.0, NEG_INF)

    scores = tf.tile(tf.concat([[0.0], tf.fill([k - 1], NEG_INF)], axis=0)[None, :], [batch, 1])  # one live beam
    lengths = tf.zeros([batch, k])
    finished = tf.zeros([batch, k], tf.bool)
    tokens = tf.fill([batch * k], START)
    ids = tf.zeros([batch, k, max_length], tf.int32)
    attention = tf.zeros([batch, k, max_length, source_steps])
    rows = tf.range(batch)[:, None] * k
    for step in tf.range(max_length):
        loop_vars, loop_states = (scores, lengths, finished, ids, attention, tokens), states
        log_probs, states, weights = penalty, [], None
        for member, (encoder_outputs, mask), member_states in zip(members, encoded, loop_states):
            probabilities, member_states, member_weights = member.step(tokens, member_states, encoder_outputs, mask)
            log_probs += tf.math.log(tf.cast(probabilities, tf.float32) + 1e-12)
            states.append(member_states)
            weights = member_weights if weights is None else weights
        log_probs = tf.reshape(log_probs, [batch, k, vocabulary])
        log_probs = tf.where(finished[:, :, None], finished_row[None, None, :], log_probs)
        candidates = tf.reshape(scores[:, :, None] + log_probs, [batch, k * vocabulary])
        scores, chosen = tf.math.top_k(candidates, k)
        parent, token = chosen // vocabulary, tf.cast(chosen % vocabulary, tf.int32)

        was_finished = tf.gather(finished, parent, batch_dims=1)
        lengths = tf.gather(lengths, parent, batch_dims=1) + tf.cast(~was_finished, tf.float32)
        finished = was_finished | (token == END)
        at_step = tf.one_hot(step, max_length)
        ids = tf.gather(ids, parent, batch_dims=1) + token[:, :, None] * tf.cast(at_step, tf.int32)[None, None, :]
        weights = tf.reshape(tf.cast(weights, tf.float32), [batch, k, source_steps])
        weights = tf.gather(weights, parent, batch_dims=1) * tf.cast(~was_finished, tf.float32)[:, :, None]
        attention = tf.gather(attention, parent, batch_dims=1) + weights[:, :, None, :] * at_step[None, None, :, None]
        flat_parent = tf.reshape(rows + parent, [-1])
        tokens = tf.reshape(token, [-1])
        # Gathers lose the static batch size; the loop needs the same shapes every iteration.
        scores, lengths, finished, ids, attention, tokens = (
            _same_shape(new, old) for new, old in zip((scores, lengths, finished, ids, attention, tokens), loop_vars))
        states = [[_same_shape(tf.gather(new, flat_parent), old) for new, old in zip(member_states, old_states)]
                  for member_states, old_states in zip(states, loop_states)]
        if tf.reduce_all(finished):
            break

    normalised = scores / tf.pow(tf.maximum(lengths, 1.0), length_penalty)
    # Prefer finished hypotheses; among them the best normalised score.
    normalised = tf.where(finished, normalised, normalised + NEG_INF)
    best = tf.argmax(normalised, axis=1, output_type=tf.int32)
    return tf.gather(ids, best, batch_dims=1), tf.gather(attention, best, batch_dims=1)


def decode(parts: Decoder | Sequence[Decoder], source: tf.Tensor, max_length: int, beam_width: int = 1,
           length_penalty: float = 1.0) -> tuple[tf.Tensor, tf.Tensor]:
    """Greedy decoding for `beam_width` 1, beam search otherwise; several models decode as an ensemble."""
    if beam_width == 1:
        return greedy_decode(parts, source, max_length)
    return beam_decode(parts, source, max_length, beam_width, length_penalty)

