"""What every family on a pretrained keras-hub encoder does with it the same way (the sentence encoder, the
classifier, the reader, the tagger): its inputs as `keras.Input`s, and its pooled sentence vector."""

from __future__ import annotations

import keras

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
