"""Character-level name generator: char embedding → stacked LSTM/GRU → Dense over characters,
optionally conditioned on a category (country), plus a batched in-graph sampler.

Token ids: 0 padding, 1 start, 2 end, 3 unknown character, then the characters of the vocabulary.
"""

from __future__ import annotations

import keras
import tensorflow as tf

from kpipe.families.char_rnn.config import CharGeneratorConfig
from kpipe.families.char_sampling import END, PAD, START, sample_next
from kpipe.layers.recurrent_cells import CELLS


def _initial_states(config: CharGeneratorConfig, category_vector, layer: int):
    """The initial state(s) of recurrent layer `layer` from the category embedding (or None)."""
    if config.conditioning != "initial_state" or layer != 0:
        return None
    units = config.units[0]
    return [keras.layers.Dense(units, activation="tanh", name=f"category_to_{name}")(category_vector)
            for name in (("h", "c") if config.cell == "lstm" else ("h",))]


def build_char_generator(config: CharGeneratorConfig) -> keras.Model:
    """Build the training model: (char ids (batch, time), category id (batch,)) → next-char logits.

    Inputs are [START, c1, ..., cn] (right-padded with 0), targets [c1, ..., cn, END]; padding is
    masked, so the loss is the mean negative log-likelihood per predicted character.

    Example:
        >>> model = build_char_generator(CharGeneratorConfig(vocabulary_size=40, num_categories=5))
        >>> model.output_shape
        (None, None, 40)
    """
    chars = keras.Input(shape=(None,), dtype="int32", name="chars")
    category = keras.Input(shape=(), dtype="int32", name="category")

    # === Embeddings (id 0 is padding: masked through the recurrent layers and the loss) ===
    x = keras.layers.Embedding(config.vocabulary_size, config.embedding_dim, mask_zero=True,
                               name="char_embedding")(chars)
    category_vector = None
    if config.conditioning != "none":
        category_vector = keras.layers.Embedding(config.num_categories, config.category_dim,
                                                 name="category_embedding")(category)
    if config.conditioning == "every_step":
        x = JoinEveryStep(name="join_category")([x, category_vector])

    # === Recurrent stack (all layers return sequences: one prediction per position) ===
    for i, units in enumerate(config.units):
        layer = CELLS[config.cell](units, return_sequences=True, dropout=config.dropout, name=f"{config.cell}_{i}")
        x = layer(x, initial_state=_initial_states(config, category_vector, i))

    # === Next-character logits ===
    if config.dropout:
        x = keras.layers.Dropout(config.dropout, name="head_dropout")(x)
    logits = keras.layers.Dense(config.vocabulary_size, dtype="float32", name="next_char")(x)
    return keras.Model([chars, category], logits, name="char_generator")


@keras.saving.register_keras_serializable(package="kpipe")
class JoinEveryStep(keras.layers.Layer):
    """Concatenate a (batch, d) vector to every step of a (batch, time, e) sequence; keeps the mask."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True

    def call(self, inputs, mask=None):
        sequence, vector = inputs
        steps = keras.ops.shape(sequence)[1]
        tiled = keras.ops.repeat(keras.ops.expand_dims(vector, 1), steps, axis=1)
        return keras.ops.concatenate([sequence, keras.ops.cast(tiled, sequence.dtype)], axis=-1)

    def compute_mask(self, inputs, mask=None):
        return mask[0] if isinstance(mask, (list, tuple)) else mask

    def compute_output_shape(self, input_shapes):
        sequence, vector = input_shapes
        return (*sequence[:2], sequence[2] + vector[-1])


class CharSampler(tf.Module):
    """Samples `count` names at once in one graph: the trained layers run one step at a time on
    their recurrent cells, in a `tf.while_loop` that stops when every name has ended or at `max_length`.
    """

    def __init__(self, model: keras.Model, config: CharGeneratorConfig, max_length: int):
        super().__init__()
        self.config = config
        self.max_length = max_length
        self.char_embedding = model.get_layer("char_embedding")
        self.category_embedding = (model.get_layer("category_embedding") if config.conditioning != "none" else None)
        self.cells = [model.get_layer(f"{config.cell}_{i}").cell for i in range(len(config.units))]
        self.state_layers = ([model.get_layer(f"category_to_{n}") for n in (("h", "c") if config.cell == "lstm" else ("h",))]
                             if config.conditioning == "initial_state" else [])
        self.head = model.get_layer("next_char")

    def _start_states(self, category_ids):
        batch = tf.shape(category_ids)[0]
        states = []
        for i, units in enumerate(self.config.units):
            if i == 0 and self.state_layers:
                vector = self.category_embedding(category_ids)
                layer_states = [layer(vector) for layer in self.state_layers]
            else:
                zeros = tf.zeros([batch, units], dtype=self.cells[i].compute_dtype)
                layer_states = [zeros, zeros] if self.config.cell == "lstm" else [zeros]
            states.append(layer_states)
        return states

    def _step(self, char_ids, category_ids, states):
        # The table itself (no padding mask here), in the cells' compute dtype (16 bits under mixed precision).
        x = tf.cast(tf.gather(self.char_embedding.embeddings, char_ids), self.cells[0].compute_dtype)
        if self.config.conditioning == "every_step":
            x = tf.concat([x, tf.cast(self.category_embedding(category_ids), x.dtype)], axis=-1)
        new_states = []
        for cell, layer_states in zip(self.cells, states):
            x, layer_new = cell(x, layer_states, training=False)
            new_states.append(list(layer_new) if isinstance(layer_new, (list, tuple)) else [layer_new])
        return self.head(x), new_states

    def sample_ids(self, prefix_ids: tf.Tensor, category_id: tf.Tensor, count: tf.Tensor, temperature: tf.Tensor,
                   top_k: tf.Tensor, seed: tf.Tensor) -> tf.Tensor:
        """(count, max_length) sampled ids after the prefix (END then PAD once a name is done)."""
        category_ids = tf.fill([count], category_id)
        states = self._start_states(category_ids)
        # Feed START and the prefix (the same for every sample) to warm up the state.
        feed = tf.concat([[START], prefix_ids], axis=0)
        logits = None
        for_prefix = tf.shape(feed)[0]

        def prefix_body(i, states, logits):
            ids = tf.fill([count], feed[i])
            logits, states = self._step(ids, category_ids, states)
            return i + 1, states, logits

        _, states, logits = tf.while_loop(
            lambda i, s, l: i < for_prefix, prefix_body,
            (tf.constant(0), states, tf.zeros([count, self.config.vocabulary_size])))
        steps = self.max_length - tf.shape(prefix_ids)[0]
        output = tf.TensorArray(tf.int32, size=steps, element_shape=[None])
        done = tf.zeros([count], tf.bool)

        def body(t, states, logits, done, output):
            ids = sample_next(logits, temperature, top_k, tf.stack([seed, t]))
            ids = tf.where(done, PAD, ids)
            output = output.write(t, ids)
            done = done | tf.equal(ids, END)
            logits, states = self._step(ids, category_ids, states)
            return t + 1, states, logits, done, output

        t, _, _, _, output = tf.while_loop(
            lambda t, s, l, d, o: (t < steps) & ~tf.reduce_all(d), body,
            (tf.constant(0), states, logits, done, output))
        ids = tf.transpose(output.stack()[:t])
        return tf.pad(ids, [[0, 0], [0, steps - t]])
