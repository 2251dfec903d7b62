"""word2vec's own training: plain SGD that touches only the rows a batch uses.

A Keras optimizer updates the whole embedding tables (Adam keeps two dense moments per row as well),
while a batch of pairs reads a few thousand rows. The steps here compute the negative-sampling
gradient in closed form and subtract it from the rows the batch used (`scatter_sub`), as the original
word2vec code and gensim do; a row used twice in a batch gets both gradients.

Learning rate: word2vec's α per pair, decayed linearly to `MIN_RATE_FRACTION`·α over the run. One step
with α equals Keras' SGD at learning rate α·batch on the mean loss of the batch (pinned in the tests).

Shared negatives: `negatives` holds one row of k noise words per group of consecutive (shuffled) pairs
instead of one per pair; the noise scores of a group are then one matrix product (Ji et al. 2016,
"Parallelizing word2vec in shared and distributed memory"), and far fewer rows are gathered and updated.
"""

from __future__ import annotations

import keras
import tensorflow as tf

MIN_RATE_FRACTION = 1e-4  # word2vec and gensim stop decaying at α · 1e-4


def _tf_variable(variable) -> tf.Variable:
    """The tf.Variable behind a Keras variable (which has no scatter methods of its own)."""
    return variable.value if isinstance(variable, keras.Variable) else variable


def _score_and_update_outputs(hidden: tf.Tensor, output_vectors: tf.Variable, true_ids: tf.Tensor,
                              negatives: tf.Tensor, rate: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
    """Scores of `hidden` (b, d) against its true word and the noise words, the loss, the output rows'
    SGD update; returns (mean loss, rate · d loss / d hidden (b, d))."""
    dim = tf.shape(hidden)[1]
    groups = tf.shape(negatives)[0]                                   # b (a draw per pair) or b / group size
    hidden_groups = tf.reshape(hidden, (groups, -1, dim))              # (G, g, d)
    true_rows = tf.gather(output_vectors, true_ids)                    # (b, d)
    noise_rows = tf.gather(output_vectors, negatives)                  # (G, k, d)
    true_scores = tf.reduce_sum(hidden * true_rows, axis=-1)           # (b,)
    noise_scores = tf.einsum("Ggd,Gkd->Ggk", hidden_groups, noise_rows)
    loss = tf.reduce_mean(tf.math.softplus(-true_scores)) + \
        tf.reduce_sum(tf.math.softplus(noise_scores)) / tf.cast(tf.shape(hidden)[0], hidden.dtype)
    # d(-log σ(s)) / ds = σ(s) - 1 for the true word; d(-log σ(-s)) / ds = σ(s) for the noise words.
    true_step = (tf.sigmoid(true_scores) - 1.0) * rate
    noise_step = tf.sigmoid(noise_scores) * rate
    hidden_step = true_step[:, None] * true_rows + tf.reshape(tf.einsum("Ggk,Gkd->Ggd", noise_step, noise_rows),
                                                              (-1, dim))
    output_vectors.scatter_sub(tf.IndexedSlices(true_step[:, None] * hidden, true_ids))
    output_vectors.scatter_sub(tf.IndexedSlices(
        tf.reshape(tf.einsum("Ggk,Ggd->Gkd", noise_step, hidden_groups), (-1, dim)), tf.reshape(negatives, [-1])))
    return loss, hidden_step


def skipgram_sgd_step(word_vectors: tf.Variable, output_vectors: tf.Variable, targets: tf.Tensor,
                      contexts: tf.Tensor, negatives: tf.Tensor, rate) -> tf.Tensor:
    """One SGD step of skip-gram on a batch; returns the batch's mean loss before the step.

    Args:
        word_vectors, output_vectors: the model's two tables (vocabulary, d).
        targets, contexts: (b,) word ids.
        negatives: (b, k) noise words per pair, or (b / g, k) shared by each group of g consecutive pairs.
        rate: α, the step per pair.
    """
    word_vectors, output_vectors = _tf_variable(word_vectors), _tf_variable(output_vectors)
    hidden = tf.gather(word_vectors, targets)
    loss, hidden_step = _score_and_update_outputs(hidden, output_vectors, contexts, negatives, rate)
    word_vectors.scatter_sub(tf.IndexedSlices(hidden_step, targets))
    return loss


def cbow_sgd_step(word_vectors: tf.Variable, output_vectors: tf.Variable, contexts: tf.Tensor, targets: tf.Tensor,
                  negatives: tf.Tensor, rate, padding_id: int) -> tf.Tensor:
    """One SGD step of CBOW (the mean of the context words' vectors predicts the target).

    Context slots holding `padding_id` are left out of the mean and get no update, so the padding
    row stays zero. Each real context word's vector moves by its share (1 / count) of the mean's step.
    """
    word_vectors, output_vectors = _tf_variable(word_vectors), _tf_variable(output_vectors)
    present = tf.cast(tf.not_equal(contexts, padding_id), word_vectors.dtype)[..., None]   # (b, 2w, 1)
    count = tf.maximum(tf.reduce_sum(present, axis=1), 1.0)                                # (b, 1)
    hidden = tf.reduce_sum(tf.gather(word_vectors, contexts) * present, axis=1) / count
    loss, hidden_step = _score_and_update_outputs(hidden, output_vectors, targets, negatives, rate)
    context_steps = present * (hidden_step / count)[:, None, :]                             # (b, 2w, d)
    word_vectors.scatter_sub(tf.IndexedSlices(tf.reshape(context_steps, (-1, tf.shape(hidden)[1])),
                                              tf.reshape(contexts, [-1])))
    return loss


def expand_shared_negatives(negatives: tf.Tensor, pairs: int) -> tf.Tensor:
    """(groups, k) shared noise words -> (pairs, k), each group's row repeated for its pairs."""
    return tf.repeat(negatives, pairs // tf.shape(negatives)[0], axis=0)


class SparseSGDTrainer(keras.Model):
    """Trains a `build_skipgram` or `build_cbow` model with the sparse SGD steps above.

    Compile it with `keras.optimizers.SGD(learning_rate=α)`: the optimizer holds α and the step
    counter (both saved and restored with a run's checkpoints, so a resumed run continues the decay
    where it stopped) and applies nothing itself. The rate at step i is
    α · max(MIN_RATE_FRACTION, 1 - i / total_steps). Calling the trainer calls the model.
    """

    def __init__(self, word2vec: keras.Model, *, total_steps: int, **kwargs):
        super().__init__(name=f"{word2vec.name}_sparse_sgd", **kwargs)
        self.word2vec = word2vec
        self.total_steps = max(int(total_steps), 1)
        self.cbow = word2vec.name == "cbow"
        self.tables = (word2vec.get_layer("word_vectors").embeddings, word2vec.get_layer("output_vectors").embeddings)
        self.padding_id = int(self.tables[1].shape[0])  # CBOW's extra (last) input row
        self.loss_tracker = keras.metrics.Mean(name="loss")
        self.built = True  # its only weights are the (built) model's

    def compile(self, *args, steps_per_execution: int = 1, **kwargs):
        # A block of batches is this trainer's unit of execution (one call each, the progress bar
        # counting blocks): Keras' own multi-step loop would only hide it.
        super().compile(*args, **kwargs)

    def call(self, inputs, training=False):
        first, second, negatives = inputs
        return self.word2vec([first, second, expand_shared_negatives(negatives, tf.shape(second)[0])],
                             training=training)

    @property
    def metrics(self):
        return [self.loss_tracker]

    def current_rate(self) -> tf.Tensor:
        progress = tf.cast(self.optimizer.iterations, tf.float32) / self.total_steps
        return tf.cast(self.optimizer.learning_rate, tf.float32) * tf.maximum(MIN_RATE_FRACTION, 1.0 - progress)

    def train_step(self, data):
        """One block of batches (`make_skipgram_dataset(..., batches_per_block=n)`), a step each."""
        (first, second, negatives), _ = data
        batches = tf.shape(second)[0]
        counter = _tf_variable(self.optimizer.iterations)

        def step(i, loss_sum):
            rate = self.current_rate()
            if self.cbow:
                loss = cbow_sgd_step(*self.tables, first[i], second[i], negatives[i], rate, self.padding_id)
            else:
                loss = skipgram_sgd_step(*self.tables, first[i], second[i], negatives[i], rate)
            # Counted after this step's updates, before the next step reads its rate.
            with tf.control_dependencies([loss]):
                counted = counter.assign_add(1)
            with tf.control_dependencies([counted]):
                return i + 1, loss_sum + loss

        _, loss_sum = tf.while_loop(lambda i, _: i < batches, step, (tf.constant(0), tf.constant(0.0)))
        count = tf.cast(batches, tf.float32)
        self.loss_tracker.update_state(loss_sum / count, sample_weight=count)  # each batch counts once
        return {"loss": self.loss_tracker.result()}
