"""A linear-chain conditional random field over per-word scores (Lafferty et al. 2001; Lample et al. 2016's
tagger head): the score of a tag sequence is the sum of its words' scores (the emissions, from the network) and of
the transitions between consecutive tags, with a score for the first and for the last tag. Training maximises the
log-likelihood of the gold sequence against all sequences (the forward algorithm's log-partition); decoding takes
the best sequence (Viterbi); each word's marginal probabilities (forward-backward) score the entities.

Sequences are right-padded (what cuDNN's masked LSTMs need): a sequence's length is the number of its words, the
steps after it are ignored. All sums are in log space.
"""

from __future__ import annotations

import keras
import tensorflow as tf


@keras.saving.register_keras_serializable(package="kpipe")
class CRF(keras.layers.Layer):
    """Holds the transition scores; called on the emissions (batch, time, tags) it returns them unchanged (the
    model's output, which `CRFLoss` and the decoding read), float32, without a mask."""

    def __init__(self, num_tags: int, **kwargs):
        super().__init__(**kwargs)
        self.num_tags = num_tags
        self.supports_masking = True

    def build(self, input_shape):
        self.transitions = self.add_weight(shape=(self.num_tags, self.num_tags), initializer="zeros",
                                           name="transitions")  # [from, to]
        self.start = self.add_weight(shape=(self.num_tags,), initializer="zeros", name="start")
        self.end = self.add_weight(shape=(self.num_tags,), initializer="zeros", name="end")

    def call(self, emissions, mask=None):
        return tf.identity(tf.cast(emissions, tf.float32))  # a new tensor: the input's mask stays behind

    def compute_mask(self, inputs, mask=None):
        return None

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "num_tags": self.num_tags}

    # === The chain's algorithms (float32 emissions, int lengths) ===

    def _steps(self, emissions):
        """Time-major emissions, (time, batch, tags), of at least two steps: a scan over the steps after the first
        cannot stack an empty result in a graph, so a batch of one-word (or empty) sentences gets padding steps,
        which no sequence's length covers."""
        emissions = tf.cast(emissions, tf.float32)
        emissions = tf.pad(emissions, [[0, 0], [0, tf.maximum(2 - tf.shape(emissions)[1], 0)], [0, 0]])
        return tf.transpose(emissions, [1, 0, 2])

    def _valid(self, steps, lengths):
        """(time, batch, 1) booleans of time-major `steps`: the step is one of the sequence's words."""
        return tf.transpose(tf.sequence_mask(lengths, tf.shape(steps)[0]), [1, 0])[:, :, None]

    def forward(self, emissions, lengths) -> tf.Tensor:
        """alpha: (time, batch, tags) log-sums of the scores of every prefix ending in each tag (a padded step
        keeps its sequence's last)."""
        steps = self._steps(emissions)
        valid = self._valid(steps, lengths)
        first = self.start[None, :] + steps[0]

        def step(alpha, inputs):
            emission, ok = inputs
            nxt = tf.reduce_logsumexp(alpha[:, :, None] + self.transitions[None], axis=1) + emission
            return tf.where(ok, nxt, alpha)

        rest = tf.scan(step, (steps[1:], valid[1:]), initializer=first)
        return tf.concat([first[None], rest], axis=0)

    def log_partition(self, emissions, lengths) -> tf.Tensor:
        """(batch,) log of the summed exp-scores of every tag sequence of each length."""
        alpha = self.forward(emissions, lengths)
        return tf.reduce_logsumexp(alpha[-1] + self.end[None, :], axis=1)

    def sequence_score(self, emissions, tags, lengths) -> tf.Tensor:
        """(batch,) the score of `tags` (batch, time), padding ignored."""
        emissions = tf.cast(emissions, tf.float32)
        tags = tf.cast(tags, tf.int32)
        mask = tf.sequence_mask(lengths, tf.shape(tags)[1], dtype=tf.float32)
        emitted = tf.reduce_sum(tf.gather(emissions, tags, batch_dims=2) * mask, axis=1)
        pairs = tf.stack([tags[:, :-1], tags[:, 1:]], axis=-1)
        moved = tf.reduce_sum(tf.gather_nd(self.transitions, pairs) * mask[:, 1:], axis=1)
        last = tf.gather(tags, tf.maximum(lengths - 1, 0), batch_dims=1)
        return emitted + moved + tf.gather(self.start, tags[:, 0]) + tf.gather(self.end, last)

    def log_likelihood(self, emissions, tags, lengths) -> tf.Tensor:
        return self.sequence_score(emissions, tags, lengths) - self.log_partition(emissions, lengths)

    def viterbi(self, emissions, lengths) -> tf.Tensor:
        """(batch, time) int32: the best tag sequence of each length (0 after it)."""
        steps = self._steps(emissions)
        valid = self._valid(steps, lengths)
        first = self.start[None, :] + steps[0]
        identity = tf.broadcast_to(tf.range(self.num_tags)[None], tf.shape(first))

        def step(carry, inputs):
            best, _ = carry
            emission, ok = inputs
            scores = best[:, :, None] + self.transitions[None]
            pointer = tf.argmax(scores, axis=1, output_type=tf.int32)
            nxt = tf.reduce_max(scores, axis=1) + emission
            return tf.where(ok, nxt, best), tf.where(ok, pointer, identity)

        best, pointers = tf.scan(step, (steps[1:], valid[1:]), initializer=(first, identity))
        final = tf.concat([first[None], best], axis=0)[-1] + self.end[None, :]
        last = tf.argmax(final, axis=1, output_type=tf.int32)

        def back(tag, pointer):
            return tf.gather(pointer, tag, batch_dims=1)

        earlier = tf.scan(back, pointers, initializer=last, reverse=True)  # tag at each step before the last
        path = tf.transpose(tf.concat([earlier, last[None]], axis=0), [1, 0])[:, :tf.shape(emissions)[1]]
        return tf.where(tf.sequence_mask(lengths, tf.shape(path)[1]), path, 0)

    def marginals(self, emissions, lengths) -> tf.Tensor:
        """(batch, time, tags) each word's probability of each tag under the chain (forward-backward)."""
        steps = self._steps(emissions)
        valid = self._valid(steps, lengths)
        alpha = self.forward(emissions, lengths)
        last = tf.broadcast_to(self.end[None, :], tf.shape(steps[0]))

        def step(beta, inputs):  # beta_t from beta_{t+1}, walking backwards
            emission, ok = inputs  # step t+1's emission and whether t+1 is a word
            nxt = tf.reduce_logsumexp(self.transitions[None] + (emission + beta)[:, None, :], axis=2)
            return tf.where(ok, nxt, last)

        rest = tf.scan(step, (steps[1:], valid[1:]), initializer=last, reverse=True)
        beta = tf.concat([rest, last[None]], axis=0)
        scores = alpha + beta
        probabilities = tf.nn.softmax(scores, axis=-1)[:tf.shape(emissions)[1]]
        return tf.transpose(probabilities, [1, 0, 2])


@keras.saving.register_keras_serializable(package="kpipe")
class CRFLoss(keras.losses.Loss):
    """The negative log-likelihood of the gold tags under `crf`, per sentence, divided by its length. Targets are
    (batch, time) tag ids padded with -1."""

    def __init__(self, crf: CRF | None = None, name: str = "crf_loss", **kwargs):
        super().__init__(name=name, **kwargs)
        self.crf = crf

    def call(self, y_true, y_pred):
        y_true = tf.cast(y_true, tf.int32)
        lengths = tf.reduce_sum(tf.cast(y_true >= 0, tf.int32), axis=1)
        nll = -self.crf.log_likelihood(y_pred, tf.maximum(y_true, 0), lengths)
        return nll / tf.cast(tf.maximum(lengths, 1), tf.float32)

    def get_config(self):
        return {"name": self.name}
