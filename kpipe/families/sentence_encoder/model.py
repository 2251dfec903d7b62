"""A pretrained backbone cut at its sentence embedding, built with the functional API.

backbone inputs (token ids, padding mask, segment ids where the architecture has them) → backbone →
"encoder_output" (batch, time, hidden) → pooling: the masked mean of the last layer ("mean") or the
pooled [CLS] output ("cls") → "sentence_embedding" (batch, hidden), optionally scaled to unit length.
The classifier (`kpipe.families.pretrained_classifier.model`) puts its head on the same pooled vector.
"""

from __future__ import annotations

import keras

from kpipe.families.sentence_encoder.config import SentenceEncoderConfig
from kpipe.layers.masked_pooling import MaskedMeanPooling


def backbone_inputs(backbone: keras.Model) -> dict:
    """One `keras.Input` per backbone input, (batch, time) each, with the backbone's dtypes."""
    return {name: keras.Input((None,), dtype=tensor.dtype, name=name) for name, tensor in backbone.input.items()}


def pool(backbone: keras.Model, inputs: dict, pooling: str):
    """The pooled sentence vector (batch, hidden) of `backbone(inputs)`: masked mean or [CLS]."""
    outputs = backbone(inputs)
    sequence = outputs["sequence_output"] if isinstance(outputs, dict) else outputs
    sequence = keras.layers.Identity(name="encoder_output")(sequence)
    if pooling == "cls":
        pooled = outputs.get("pooled_output") if isinstance(outputs, dict) else None
        return sequence[:, 0, :] if pooled is None else pooled
    freeze_pooler(backbone)  # BERT's [CLS] pooler gets no gradient under mean pooling
    return MaskedMeanPooling(name="mean_pooling")(sequence, mask=inputs["padding_mask"])


def freeze_pooler(backbone: keras.Model) -> None:
    """Freeze BERT's [CLS] pooler (the unused branch under mean pooling), where the backbone has one."""
    if "pooled_dense" in {layer.name for layer in backbone.layers}:
        backbone.get_layer("pooled_dense").trainable = False


def build_sentence_encoder(config: SentenceEncoderConfig, backbone: keras.Model) -> keras.Model:
    """`backbone` (a keras-hub `Backbone`, e.g. from `presets.load_backbone`) under its pooling, frozen.

    Returns:
        A model from the backbone's inputs (each int (batch, time)) to embeddings (batch, hidden).
    """
    backbone.trainable = False
    inputs = backbone_inputs(backbone)
    pooled = pool(backbone, inputs, config.pooling)
    if config.normalize:
        pooled = keras.layers.UnitNormalization(axis=-1, name="unit_length")(pooled)
    pooled = keras.layers.Identity(name="sentence_embedding")(pooled)
    return keras.Model(inputs, pooled, name="sentence_encoder")
