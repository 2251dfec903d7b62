"""A text classifier on a pretrained keras-hub backbone, built with the functional API.

backbone inputs (token ids, padding mask, segment ids where the architecture has them) → backbone →
"encoder_output" (batch, time, hidden) → pooling: the masked mean of the last layer ("mean", what
sentence-transformer checkpoints are trained with) or the pooled [CLS] output ("cls") →
"sentence_embedding" (batch, hidden) → Dropout → Dense.
"""

from __future__ import annotations

import keras

from kpipe.families.pretrained_classifier.config import PretrainedClassifierConfig
from kpipe.families.encoder_inputs import backbone_inputs, freeze_pooler, pool
from kpipe.layers.classifier_head import probabilities_layer


def build_pretrained_classifier(config: PretrainedClassifierConfig, backbone: keras.Model) -> keras.Model:
    """Put a classification head on `backbone` (a keras-hub `Backbone`, e.g. from `presets.load_backbone`).

    `config.backbone_training` decides what trains: "frozen" and "two_phase" build the backbone frozen
    (the second phase of "two_phase" unfreezes it, see `unfreeze_backbone`), "lora" adds LoRA adapters of
    rank `config.lora_rank` to its attention (and freezes the rest of it), "trainable" trains everything.

    Returns:
        A model from the backbone's inputs (each int (batch, time)) to class probabilities
        (batch, classes), or (batch, 1) for two classes.
    """
    if config.backbone_training == "lora":
        backbone.enable_lora(config.lora_rank)
    elif config.backbone_training in ("frozen", "two_phase"):
        backbone.trainable = False
    inputs = backbone_inputs(backbone)
    pooled = pool(backbone, inputs, config.pooling)
    pooled = keras.layers.Identity(name="sentence_embedding")(pooled)
    x = keras.layers.Dropout(config.dropout, name="head_dropout")(pooled)
    probabilities = probabilities_layer(config.num_classes, config.multi_label)(x)
    return keras.Model(inputs, probabilities, name="pretrained_classifier")


def backbone_of(model: keras.Model) -> keras.Model:
    """The keras-hub backbone inside a `build_pretrained_classifier` model."""
    import keras_hub

    return next(layer for layer in model.layers if isinstance(layer, keras_hub.models.Backbone))


def unfreeze_backbone(model: keras.Model, pooling: str = "mean") -> None:
    """Make the backbone trainable (the second phase of "two_phase"); an unused pooler stays frozen."""
    backbone = backbone_of(model)
    backbone.trainable = True
    if pooling != "cls":
        freeze_pooler(backbone)


def embedding_model(model: keras.Model) -> keras.Model:
    """The classifier cut at its pooled sentence embedding: backbone inputs -> (batch, hidden)."""
    return keras.Model(model.inputs, model.get_layer("sentence_embedding").output, name="sentence_encoder")
