"""An extractive reader on a pretrained keras-hub backbone, built with the functional API.

backbone inputs (token ids, segment ids where the architecture has them, padding mask) -> backbone ->
"sequence_output" (batch, time, hidden) -> Dropout -> Dense(2) -> the start and end logits (batch, time, 2),
float32, padding at -1e9 so a softmax over positions never picks it.
"""

from __future__ import annotations

import keras

from kpipe.families.pretrained_reader.config import PretrainedReaderConfig
from kpipe.families.encoder_inputs import backbone_inputs, freeze_pooler

PADDING_LOGIT = -1e9


@keras.saving.register_keras_serializable(package="kpipe")
class MaskPositions(keras.layers.Layer):
    """Logits (batch, time, 2) with the padding positions at PADDING_LOGIT."""

    def call(self, logits, padding_mask):
        keep = keras.ops.expand_dims(keras.ops.cast(padding_mask, "bool"), -1)
        return keras.ops.where(keep, logits, keras.ops.full_like(logits, PADDING_LOGIT))


def build_pretrained_reader(config: PretrainedReaderConfig, backbone: keras.Model) -> keras.Model:
    """Put a start/end projection on `backbone` (a keras-hub `Backbone`, e.g. from `presets.load_backbone`).

    Returns:
        A model from the backbone's inputs (each int (batch, time)) to logits (batch, time, 2): [..., 0] the start,
        [..., 1] the end.
    """
    if config.backbone_training == "frozen":
        backbone.trainable = False
    freeze_pooler(backbone)  # BERT's [CLS] pooler is not read: no gradient reaches it
    inputs = backbone_inputs(backbone)
    outputs = backbone(inputs)
    sequence = outputs["sequence_output"] if isinstance(outputs, dict) else outputs
    x = keras.layers.Dropout(config.dropout, name="reader_dropout")(sequence)
    logits = keras.layers.Dense(2, dtype="float32", name="span_logits")(x)
    logits = MaskPositions(dtype="float32", name="masked_span_logits")(logits, inputs["padding_mask"])
    return keras.Model(inputs, logits, name="pretrained_reader")


@keras.saving.register_keras_serializable(package="kpipe")
class SpanLoss(keras.losses.Loss):
    """The mean of the start's and the end's cross-entropy over positions; targets (batch, 2) positions."""

    def __init__(self, name="span_loss", **kwargs):
        super().__init__(name=name, **kwargs)

    def call(self, y_true, y_pred):
        y_true = keras.ops.cast(y_true, "int32")
        start = keras.losses.sparse_categorical_crossentropy(y_true[:, 0], y_pred[..., 0], from_logits=True)
        end = keras.losses.sparse_categorical_crossentropy(y_true[:, 1], y_pred[..., 1], from_logits=True)
        return (start + end) / 2
