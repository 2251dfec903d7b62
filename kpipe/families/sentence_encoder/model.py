"""A pretrained backbone cut at its sentence embedding, built with the functional API.

backbone inputs (token ids, padding mask, segment ids where the architecture has them) → backbone →
"encoder_output" (batch, time, hidden) → pooling: the masked mean of the last layer ("mean") or the
pooled [CLS] output ("cls") → "sentence_embedding" (batch, hidden), optionally scaled to unit length.
The classifier (`kpipe.families.pretrained_classifier.model`) puts its head on the same pooled vector.
"""

from __future__ import annotations

import keras

from kpipe.families.encoder_inputs import backbone_inputs, pool
from kpipe.families.sentence_encoder.config import SentenceEncoderConfig


def build_sentence_encoder(config: SentenceEncoderConfig, backbone: keras.Model) -> keras.Model:
    """`backbone` (a keras-hub `Backbone`, e.g. from `presets.load_backbone`) under its pooling, frozen.

    Returns:
        A model from the backbone's inputs (each int (batch, time)) to embeddings (batch, hidden).
    """
    backbone.trainable = False
    inputs = backbone_inputs(backbone)
    pooled = pool(backbone, inputs, config.pooling)
    # float32 from here whatever the policy: embeddings in bfloat16 would keep 3 significant digits
    if config.normalize:
        pooled = keras.layers.UnitNormalization(axis=-1, name="unit_length", dtype="float32")(pooled)
    pooled = keras.layers.Identity(name="sentence_embedding", dtype="float32")(pooled)
    return keras.Model(inputs, pooled, name="sentence_encoder")
