"""Transformer encoder-decoder (Vaswani et al. 2017) from keras-hub layers, built with the functional API.

Encoder: `TokenAndPositionEmbedding` -> `TransformerEncoder` x N. Decoder: `TokenAndPositionEmbedding` ->
`TransformerDecoder` x M (causal self-attention, cross-attention over the encoder outputs) -> Dense over the
target vocabulary. Teacher forcing in training; padding masked on both sides (Keras masks from the embeddings,
which keras-hub's layers read) and in the loss.

Decoding (`kpipe.families.seq2seq_decoding`) calls `encode` once and `step` once per target token,
as for the recurrent family: here the decoder states are keras-hub's key/value caches (self-attention: the
positions emitted so far; cross-attention: the source, computed once), so each step runs the decoder on one
position. The transformer returns no attention weights to plot (zeros).

Token ids on both sides as `seq2seq_attention`: 0 padding, 1 unknown, 2 start, 3 end, then the vocabulary.
"""

from __future__ import annotations

import dataclasses

import keras
import tensorflow as tf

from kpipe.families.seq2seq_transformer.config import Seq2SeqTransformerConfig
from kpipe.tokens import SEQ2SEQ

PAD, START = SEQ2SEQ.pad, SEQ2SEQ.start


@dataclasses.dataclass(frozen=True)
class TransformerParts:
    """The layer objects of a built model, shared by training and decoding (never rebuilt)."""

    model: keras.Model
    source_embedding: keras.layers.Layer
    encoders: list
    target_embedding: keras.layers.Layer
    decoders: list
    output: keras.layers.Layer

    @classmethod
    def from_model(cls, model: keras.Model) -> "TransformerParts":
        """The parts of a model `build_seq2seq_transformer` made (e.g. loaded from model.keras), found by name."""
        def numbered(prefix):
            return [layer for layer in model.layers if layer.name.startswith(prefix)]

        return cls(model, model.get_layer("source_embedding"), numbered("encoder_"),
                   model.get_layer("target_embedding"), numbered("decoder_"), model.get_layer("output"))

    def encode(self, source: tf.Tensor):
        """Encoder outputs, source mask and the decoder's initial states: the next position (batch,), then per
        decoder layer an empty self-attention key/value cache and the cross-attention keys/values of the source
        (computed once here, read at every step)."""
        mask = tf.not_equal(source, PAD)
        hidden = self.source_embedding(source)
        for encoder in self.encoders:
            hidden = encoder(hidden)  # padding from the embedding's mask, as in training
        batch, source_steps = tf.shape(source)[0], tf.shape(source)[1]
        start = self.target_embedding(tf.fill([batch, 1], START))  # any query: only the cross keys/values are kept
        self_caches, cross_caches = [], []
        for decoder in self.decoders:
            heads = decoder.num_heads
            key_dim = self.target_embedding.embedding_dim // heads
            dtype = decoder.compute_dtype
            self_cache = tf.zeros([batch, 2, self.positions, heads, key_dim], dtype)
            _, _, cross_cache = decoder(
                start, hidden, encoder_padding_mask=mask, self_attention_cache=self_cache,
                self_attention_cache_update_index=0, cross_attention_cache=tf.zeros(
                    [batch, 2, source_steps, heads, key_dim], dtype), cross_attention_cache_update_index=0)
            self_caches.append(self_cache)
            cross_caches.append(cross_cache)
        return hidden, mask, [tf.zeros([batch], tf.int32), *self_caches, *cross_caches]

    @property
    def positions(self) -> int:
        return self.target_embedding.position_embedding.sequence_length

    def step(self, tokens: tf.Tensor, states: list, encoder_outputs, source_mask):
        """One decoder step for the previous tokens (batch,) at the next position: each decoder layer attends to
        its cache of the earlier positions' keys/values and adds this one's -> (probabilities, new states, zero
        attention). The same numbers as running the decoder over the whole prefix, one position's work per step."""
        index, *caches = states
        layers = len(self.decoders)
        at = tf.minimum(index[0], self.positions - 1)  # every row decodes in step; past the end, the last slot
        hidden = self.target_embedding(tokens[:, None], start_index=at)
        self_caches = []
        for decoder, self_cache, cross_cache in zip(self.decoders, caches[:layers], caches[layers:]):
            hidden, self_cache, _ = decoder(
                hidden, encoder_outputs, encoder_padding_mask=source_mask, self_attention_cache=self_cache,
                self_attention_cache_update_index=at, cross_attention_cache=cross_cache,
                cross_attention_cache_update_index=None)
            self_caches.append(self_cache)
        probabilities = self.output(hidden[:, 0])
        return probabilities, [index + 1, *self_caches, *caches[layers:]], tf.zeros(tf.shape(source_mask), tf.float32)


def build_seq2seq_transformer(config: Seq2SeqTransformerConfig) -> TransformerParts:
    """Build the teacher-forced training model and return it with its layers.

    Model inputs: {"source": (batch, source_steps), "target_in": (batch, target_steps)} int ids, right-padded;
    `target_in` is [START, t1, ..., tn]. Output: probabilities over the target vocabulary (batch, target_steps,
    vocabulary) for [t1, ..., tn, END], masked where padded.

    Example:
        >>> parts = build_seq2seq_transformer(Seq2SeqTransformerConfig(
        ...     source_vocabulary_size=30, target_vocabulary_size=45, hidden_dim=16, num_heads=2,
        ...     intermediate_dim=32))
        >>> parts.model.output_shape
        (None, None, 45)
    """
    import keras_hub

    source = keras.Input((None,), dtype="int32", name="source")
    target_in = keras.Input((None,), dtype="int32", name="target_in")
    source_embedding = keras_hub.layers.TokenAndPositionEmbedding(
        config.source_vocabulary_size, config.source_positions, config.hidden_dim, mask_zero=True,
        name="source_embedding")
    target_embedding = keras_hub.layers.TokenAndPositionEmbedding(
        config.target_vocabulary_size, config.target_positions, config.hidden_dim, mask_zero=True,
        name="target_embedding")
    encoders = [keras_hub.layers.TransformerEncoder(config.intermediate_dim, config.num_heads, config.dropout,
                                                    name=f"encoder_{i + 1}") for i in range(config.encoder_layers)]
    decoders = [keras_hub.layers.TransformerDecoder(config.intermediate_dim, config.num_heads, config.dropout,
                                                    name=f"decoder_{i + 1}") for i in range(config.decoder_layers)]
    output = keras.layers.Dense(config.target_vocabulary_size, activation="softmax", dtype="float32", name="output")

    hidden = source_embedding(source)
    for encoder in encoders:
        hidden = encoder(hidden)  # padding from the embedding's mask
    decoded = target_embedding(target_in)
    for decoder in decoders:
        decoded = decoder(decoded, hidden)  # causal self-attention; both paddings from the masks
    probabilities = output(keras.layers.Dropout(config.dropout)(decoded))
    model = keras.Model({"source": source, "target_in": target_in}, probabilities, name="seq2seq_transformer")
    return TransformerParts(model, source_embedding, encoders, target_embedding, decoders, output)
