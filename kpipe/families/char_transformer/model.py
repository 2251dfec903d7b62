"""Character-level name generator as a causal (decoder-only, GPT-style) transformer, with a batched sampler.

char ids → character + learned position embeddings (+ the category's embedding at every position) →
N × causal self-attention blocks (keras-hub's `TransformerDecoder` without cross-attention for softmax
attention; `VariantTransformerEncoder(causal=True)` for the linear, random-feature and FMM variants) →
Dense over characters. Same inputs, outputs and token ids as `build_char_generator`, so the generate
pipeline trains, scores and exports either.
"""

from __future__ import annotations

import keras
import tensorflow as tf

from kpipe.families.char_sampling import END, PAD, START, sample_next
from kpipe.families.char_transformer.config import CharTransformerConfig
from kpipe.layers.attention_variants import VariantTransformerEncoder


@keras.saving.register_keras_serializable(package="kpipe")
class AddToEveryStep(keras.layers.Layer):
    """(batch, time, d) sequence + (batch, d) vector added at every step."""

    def call(self, inputs):
        sequence, vector = inputs
        return sequence + keras.ops.cast(vector, sequence.dtype)[:, None, :]

    def compute_output_shape(self, input_shapes):
        return input_shapes[0]


def build_char_transformer(config: CharTransformerConfig) -> keras.Model:
    """Build the training model: (char ids (batch, time), category id (batch,)) → next-char logits.

    Position i sees characters 0 … i only, so one pass scores every next character of a name. Inputs are
    [START, c1, ..., cn] right-padded with 0 (padded keys are masked; padded targets carry no loss).

    Example:
        >>> model = build_char_transformer(CharTransformerConfig(vocabulary_size=40, num_categories=5))
        >>> model.output_shape
        (None, None, 40)
    """
    import keras_hub

    chars = keras.Input(shape=(None,), dtype="int32", name="chars")
    category = keras.Input(shape=(), dtype="int32", name="category")
    padding_mask = keras.ops.not_equal(chars, PAD)
    x = keras_hub.layers.TokenAndPositionEmbedding(config.vocabulary_size, config.sequence_length, config.hidden_dim,
                                                   name="char_and_position_embedding")(chars)
    if config.conditioning == "every_step":
        category_vector = keras.layers.Embedding(config.num_categories, config.hidden_dim,
                                                 name="category_embedding")(category)
        x = AddToEveryStep(name="add_category")([x, category_vector])
    x = keras.layers.Dropout(config.dropout)(x)
    for i in range(config.num_layers):
        if config.attention == "softmax":
            block = keras_hub.layers.TransformerDecoder(config.intermediate_dim, config.num_heads,
                                                        dropout=config.dropout, name=f"causal_block_{i}")
            x = block(x, decoder_padding_mask=padding_mask, use_causal_mask=True)
        else:
            block = VariantTransformerEncoder(config.intermediate_dim, config.num_heads, config.attention,
                                              dropout=config.dropout, attention_options=config.attention_options(),
                                              causal=True, name=f"causal_block_{i}")
            x = block(x, padding_mask=padding_mask)
    logits = keras.layers.Dense(config.vocabulary_size, dtype="float32", name="next_char")(x)
    return keras.Model([chars, category], logits, name="char_transformer")


class CharTransformerSampler(tf.Module):
    """Samples `count` names at once in one graph, like `CharSampler`: each step runs the model on a
    (count, max_length + 1) buffer holding START, the prefix and what was sampled so far, and reads the
    logits at the last filled position (causal attention: the empty positions after it cannot matter).
    Names are at most 20 characters, so rerunning the prefix each step costs less than caching keys."""

    def __init__(self, model: keras.Model, config: CharTransformerConfig, max_length: int):
        super().__init__()
        self.model, self.config, self.max_length = model, config, max_length

    def sample_ids(self, prefix_ids: tf.Tensor, category_id: tf.Tensor, count: tf.Tensor, temperature: tf.Tensor,
                   top_k: tf.Tensor, seed: tf.Tensor) -> tf.Tensor:
        """(count, max_length − len(prefix)) sampled ids after the prefix (END then PAD once a name is done)."""
        category_ids = tf.fill([count], category_id)
        width = self.max_length + 1
        fed = tf.concat([[START], prefix_ids], axis=0)
        buffer = tf.tile(tf.pad(fed, [[0, width - tf.shape(fed)[0]]])[None, :], [count, 1])
        last = tf.shape(fed)[0] - 1  # the position whose logits predict the next character
        steps = self.max_length - tf.shape(prefix_ids)[0]
        output = tf.TensorArray(tf.int32, size=steps, element_shape=[None])
        done = tf.zeros([count], tf.bool)

        def body(t, buffer, done, output):
            logits = self.model([buffer, category_ids], training=False)[:, last + t, :]
            ids = tf.where(done, PAD, sample_next(logits, temperature, top_k, tf.stack([seed, t])))
            output = output.write(t, ids)
            buffer = tf.where(tf.range(width)[None, :] == last + t + 1, ids[:, None], buffer)
            return t + 1, buffer, done | tf.equal(ids, END), output

        t, _, _, output = tf.while_loop(lambda t, b, d, o: (t < steps) & ~tf.reduce_all(d), body,
                                        (tf.constant(0), buffer, done, output))
        ids = tf.transpose(output.stack()[:t])
        return tf.pad(ids, [[0, 0], [0, steps - t]])
