"""Transformer-encoder text classifier from keras-hub layers, built with the functional API.

token ids → token + position embeddings (learned `TokenAndPositionEmbedding`, or sine
`SinePositionEncoding` added to a token `Embedding`) → N × `TransformerEncoder` (multi-head
self-attention, add & norm, feed-forward) with padding masked → masked mean pooling or a [CLS]
token → Dropout → Dense. The encoder output layer is named "encoder_output", so sentence
embeddings (masked mean of it) can be read from any trained model.
"""

from __future__ import annotations

import keras

from kpipe.families.transformer_classifier.config import TransformerClassifierConfig
from kpipe.layers.attention_variants import VariantTransformerEncoder
from kpipe.layers.classifier_head import probabilities_layer
from kpipe.layers.masked_pooling import MaskedMeanPooling
from kpipe.tokens import WORDPIECE_CLS

CLS_ID = WORDPIECE_CLS


def build_transformer_classifier(config: TransformerClassifierConfig) -> keras.Model:
    """Build the classifier: int ids (batch, time), right-padded with 0 → class probabilities.

    Example:
        >>> model = build_transformer_classifier(TransformerClassifierConfig(vocabulary_size=500, num_classes=3))
        >>> model.output_shape
        (None, 3)
    """
    import keras_hub

    token_ids = keras.Input((None,), dtype="int32", name="token_ids")
    ids = token_ids
    length = config.sequence_length
    if config.pooling == "cls":
        cls = keras.ops.full_like(ids[:, :1], CLS_ID)
        ids = keras.ops.concatenate([cls, ids], axis=1)
        length += 1
    padding_mask = keras.ops.not_equal(ids, 0)
    if config.position_encoding == "learned":
        x = keras_hub.layers.TokenAndPositionEmbedding(config.vocabulary_size, length, config.hidden_dim,
                                                       name="token_and_position_embedding")(ids)
    else:
        tokens = keras.layers.Embedding(config.vocabulary_size, config.hidden_dim, name="token_embedding")(ids)
        x = tokens + keras_hub.layers.SinePositionEncoding(name="sine_position_encoding")(tokens)
    x = keras.layers.Dropout(config.dropout)(x)
    for i in range(config.num_layers):
        if config.attention != "softmax":
            encoder = VariantTransformerEncoder(config.intermediate_dim, config.num_heads, config.attention,
                                                dropout=config.dropout, attention_options=config.attention_options(),
                                                name=f"transformer_encoder_{i}")
        else:
            encoder = keras_hub.layers.TransformerEncoder(config.intermediate_dim, config.num_heads,
                                                          dropout=config.dropout, name=f"transformer_encoder_{i}")
        x = encoder(x, padding_mask=padding_mask)
    x = keras.layers.Identity(name="encoder_output")(x)
    if config.pooling == "cls":
        pooled = x[:, 0, :]
    else:
        pooled = MaskedMeanPooling(name="mean_pooling")(x, mask=padding_mask)
    pooled = keras.layers.Dropout(config.dropout)(pooled)
    outputs = probabilities_layer(config.num_classes, config.multi_label)(pooled)
    return keras.Model(token_ids, outputs, name="transformer_classifier")


def build_masked_lm(config: TransformerClassifierConfig) -> keras.Model:
    """The classifier's encoder under keras-hub's `MaskedLMHead` (tied to the token embedding).

    Inputs: {"token_ids": masked ids (batch, time), "mask_positions": (batch, masks)}; output:
    probabilities over the vocabulary at each masked position. The encoder is the sub-model
    named "encoder", whose layers carry the classifier's layer names, so its weights move into a
    classifier by name (`encoder_weights`).
    """
    import keras_hub

    classifier = build_transformer_classifier(config)
    encoder = keras.Model(classifier.input, classifier.get_layer("encoder_output").output, name="encoder")
    token_ids = keras.Input((None,), dtype="int32", name="token_ids")
    mask_positions = keras.Input((None,), dtype="int32", name="mask_positions")
    encoded = encoder(token_ids)
    if config.pooling == "cls":  # the encoder put a [CLS] position in front
        mask_positions_in_encoded = mask_positions + 1
    else:
        mask_positions_in_encoded = mask_positions
    outputs = keras_hub.layers.MaskedLMHead(token_embedding=token_embedding(classifier), activation="softmax", dtype="float32",
                                            name="masked_lm_head")(encoded, mask_positions=mask_positions_in_encoded)
    return keras.Model({"token_ids": token_ids, "mask_positions": mask_positions}, outputs, name="masked_lm")


def token_embedding(model: keras.Model) -> keras.layers.Embedding:
    """The token embedding layer of a transformer classifier: inside keras-hub's
    `TokenAndPositionEmbedding` (learned positions) or the "token_embedding" layer (sine).

    Raises:
        ValueError: `model` has neither layer.
    """
    names = {layer.name for layer in model.layers}
    if "token_and_position_embedding" in names:
        return model.get_layer("token_and_position_embedding").token_embedding
    return model.get_layer("token_embedding")


def encoder_weights(masked_lm: keras.Model) -> dict[str, list]:
    """Layer name → weights of every encoder layer of a `build_masked_lm` model."""
    return {layer.name: layer.get_weights() for layer in masked_lm.get_layer("encoder").layers if layer.weights}
