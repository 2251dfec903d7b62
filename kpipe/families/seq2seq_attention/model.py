"""Encoder-decoder with additive (Bahdanau) attention, built with the functional API.

Encoder: Embedding → Bidirectional GRU/LSTM (sequences and final states). Decoder: Embedding →
GRU/LSTM started from the encoder's final states (through a Dense bridge), then at every target
step additive attention over all encoder outputs, the context concatenated with the decoder
output, → Dense over the target vocabulary. Training uses teacher forcing; padding is masked in
the attention (source) and in the loss (target, through Keras masks).

Token ids on both sides: 0 padding, 1 unknown, 2 start, 3 end, then the vocabulary.
"""

from __future__ import annotations

import dataclasses

import keras
import tensorflow as tf

from kpipe.families.seq2seq_attention.config import Seq2SeqConfig
from kpipe.layers.recurrent_cells import CELLS
from kpipe.tokens import SEQ2SEQ

PAD, UNKNOWN, START, END, SPECIAL_TOKENS = SEQ2SEQ.pad, SEQ2SEQ.unknown, SEQ2SEQ.start, SEQ2SEQ.end, SEQ2SEQ.count


@keras.saving.register_keras_serializable(package="kpipe")
class BahdanauAttention(keras.layers.Layer):
    """Additive attention: score(s, h) = vᵀ tanh(W₁·h + W₂·s), softmax over source positions.

    Call with `query` (batch, target_steps, query_dim), `values` (batch, source_steps, value_dim)
    and `values_mask` (batch, source_steps; False = padding). Returns the context vectors
    (batch, target_steps, value_dim) and the attention weights (batch, target_steps, source_steps).
    """

    def __init__(self, units: int, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.w1 = keras.layers.Dense(units, use_bias=False, name="w1")  # applied to encoder outputs
        self.w2 = keras.layers.Dense(units, use_bias=False, name="w2")  # applied to decoder states
        self.v = keras.layers.Dense(1, use_bias=False, name="v")
        self.supports_masking = True

    def build(self, query_shape, values_shape=None, values_mask_shape=None):
        self.w1.build(values_shape)
        self.w2.build(query_shape)
        self.v.build((None, None, None, self.units))

    def call(self, query, values, values_mask=None):
        keys = self.w1(values)[:, None, :, :]                       # (b, 1, s, a)
        queries = self.w2(query)[:, :, None, :]                     # (b, t, 1, a)
        scores = self.v(keras.ops.tanh(keys + queries))[..., 0]     # (b, t, s)
        if values_mask is not None:
            # Padding gets a large negative score; an all-padding source (empty input) then
            # attends uniformly to zeros instead of producing NaN.
            scores = keras.ops.where(values_mask[:, None, :], scores, keras.ops.cast(-1e9, scores.dtype))
        weights = keras.ops.softmax(scores, axis=-1)
        context = keras.ops.matmul(weights, keras.ops.cast(values, weights.dtype))
        return context, weights

    def compute_mask(self, query, previous_mask=None):
        # Keras passes the first input and its mask: the decoder's target-padding mask, which both
        # outputs keep, so that it reaches the loss through the concatenation with the context.
        return [previous_mask, previous_mask]

    def compute_output_shape(self, query_shape, values_shape, values_mask_shape=None):
        return (query_shape[0], query_shape[1], values_shape[2]), (query_shape[0], query_shape[1], values_shape[1])

    def get_config(self):
        return {**super().get_config(), "units": self.units}


@dataclasses.dataclass(frozen=True)
class Seq2SeqParts:
    """The layer objects of a built model, shared by training and inference (never rebuilt)."""

    model: keras.Model
    source_embedding: keras.layers.Layer
    encoder: keras.layers.Layer
    bridges: list[keras.layers.Layer]
    target_embedding: keras.layers.Layer
    decoder: keras.layers.Layer
    attention: BahdanauAttention
    output: keras.layers.Layer
    cell: str

    @classmethod
    def from_model(cls, model: keras.Model) -> "Seq2SeqParts":
        """The parts of a model `build_seq2seq` made (e.g. loaded from model.keras), found by name."""
        bridges = [model.get_layer(f"bridge_{n}") for n in ("h", "c") if any(
            layer.name == f"bridge_{n}" for layer in model.layers)]
        return cls(model, model.get_layer("source_embedding"), model.get_layer("encoder"), bridges,
                   model.get_layer("target_embedding"), model.get_layer("decoder"), model.get_layer("attention"),
                   model.get_layer("output"), "lstm" if len(bridges) == 2 else "gru")

    # What decoding calls (`decoding.py`), as every translation family's parts do (see seq2seq_transformer).
    def encode(self, source: tf.Tensor):
        return encode(self, source)

    def step(self, tokens: tf.Tensor, states: list, encoder_outputs, source_mask):
        return decode_step(self, tokens, states, encoder_outputs, source_mask)


def build_seq2seq(config: Seq2SeqConfig) -> Seq2SeqParts:
    """Build the teacher-forced training model and return it with its layers.

    Model inputs: {"source": (batch, source_steps), "target_in": (batch, target_steps)} int ids,
    right-padded; `target_in` is [START, t1, ..., tn]. Output: probabilities over the target
    vocabulary (batch, target_steps, vocabulary) for [t1, ..., tn, END], masked where padded.

    Example:
        >>> parts = build_seq2seq(Seq2SeqConfig(source_vocabulary_size=30, target_vocabulary_size=45))
        >>> parts.model.output_shape
        (None, None, 45)
    """
    cell = CELLS[config.cell]
    source = keras.Input((None,), dtype="int32", name="source")
    target_in = keras.Input((None,), dtype="int32", name="target_in")

    source_embedding = keras.layers.Embedding(config.source_vocabulary_size, config.embedding_dim, mask_zero=True,
                                              name="source_embedding")
    encoder = keras.layers.Bidirectional(cell(config.encoder_units, return_sequences=True, return_state=True),
                                         name="encoder")
    state_names = ("h", "c") if config.cell == "lstm" else ("h",)
    bridges = [keras.layers.Dense(config.decoder_units, activation="tanh", name=f"bridge_{n}") for n in state_names]
    target_embedding = keras.layers.Embedding(config.target_vocabulary_size, config.embedding_dim, mask_zero=True,
                                              name="target_embedding")
    decoder = cell(config.decoder_units, return_sequences=True, return_state=True, name="decoder")
    attention = BahdanauAttention(config.attention_units, name="attention")
    output = keras.layers.Dense(config.target_vocabulary_size, activation="softmax", dtype="float32", name="output")

    embedded = keras.layers.Dropout(config.dropout)(source_embedding(source))
    encoder_outputs, *encoder_states = encoder(embedded)
    initial_state = _bridge(bridges, encoder_states)
    decoder_outputs, *_ = decoder(keras.layers.Dropout(config.dropout)(target_embedding(target_in)),
                                  initial_state=initial_state)
    source_mask = keras.ops.not_equal(source, PAD)
    context, _ = attention(decoder_outputs, encoder_outputs, source_mask)
    combined = keras.layers.Concatenate(name="decoder_and_context")([decoder_outputs, context])
    probabilities = output(keras.layers.Dropout(config.dropout)(combined))
    model = keras.Model({"source": source, "target_in": target_in}, probabilities, name="seq2seq_attention")
    return Seq2SeqParts(model, source_embedding, encoder, bridges, target_embedding, decoder, attention, output,
                        config.cell)


def _bridge(bridges, encoder_states):
    """Decoder initial state(s) from the encoder's final forward and backward states."""
    half = len(encoder_states) // 2  # [fw_h, (fw_c), bw_h, (bw_c)]
    forward, backward = encoder_states[:half], encoder_states[half:]
    return [bridge(keras.ops.concatenate([f, b], axis=-1)) for bridge, f, b in zip(bridges, forward, backward)]


def encode(parts: Seq2SeqParts, source: tf.Tensor):
    """Encoder outputs, source mask and the decoder's initial state(s) for a batch of source ids."""
    embedded = parts.source_embedding(source)
    mask = tf.not_equal(source, PAD)
    encoder_outputs, *states = parts.encoder(embedded, mask=mask)
    return encoder_outputs, mask, _bridge(parts.bridges, states)


def decode_step(parts: Seq2SeqParts, tokens: tf.Tensor, states: list, encoder_outputs, source_mask):
    """One decoder step for a batch: previous tokens (batch,) → (probabilities, new states, attention)."""
    embedded = parts.target_embedding(tokens[:, None])
    outputs, *new_states = parts.decoder(embedded, initial_state=states)
    context, weights = parts.attention(outputs, encoder_outputs, source_mask)
    probabilities = parts.output(keras.ops.concatenate([outputs, context], axis=-1))
    return probabilities[:, 0, :], new_states, weights[:, 0, :]
