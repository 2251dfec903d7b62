"""The `pretrained_classifier` family's config, without TensorFlow (parsed and checked before TensorFlow loads)."""

from __future__ import annotations

import dataclasses

from kpipe.config.constraints import Checked, above, at_least, fraction, one_of, setting
from kpipe.layers.settings import POOLINGS

BACKBONE_TRAINING = ("trainable", "frozen", "two_phase", "lora")  # what fine-tuning a pretrained encoder trains


@dataclasses.dataclass(frozen=True, kw_only=True)
class PretrainedClassifierConfig(Checked):
    """Hyperparameters of `kpipe.pretrained.classifier.build_pretrained_classifier`: a pretrained encoder,
    loaded with keras-hub's `from_preset`, under a classification head.

    Args:
        family: always "pretrained_classifier".
        preset: the encoder: a keras-hub preset name ("all_minilm_l6_v2_en", "bert_tiny_en_uncased", ...),
            an "hf://" or "kaggle://" handle, or a local folder in keras-hub's preset format or in Hugging
            Face format (config.json, vocab.txt, model.safetensors). Its tokenizer comes with it;
            `preprocessing.sequence_length` is the most tokens a text keeps, special tokens included.
        pooling: "mean" (masked mean of the last layer: what sentence-transformer checkpoints are
            trained with) or "cls" (the backbone's pooled [CLS] output).
        dropout: dropout on the pooled vector, before the head.
        backbone_training: "trainable" (fine-tune everything), "frozen" (train the head only),
            "two_phase" (the head alone for `head_epochs` epochs at `head_learning_rate`, then everything at
            `training.learning_rate`) or "lora" (low-rank adapters of rank `lora_rank` on the attention's
            query and value projections; the pretrained weights stay frozen).
        head_epochs: with "two_phase", the epochs that train the head alone.
        head_learning_rate: with "two_phase", the head's learning rate in its first phase.
        lora_rank: with "lora", the rank of the adapters.
        num_classes: set by kpipe from the data.
    """

    family: str = setting("pretrained_classifier", one_of(("pretrained_classifier",)))
    preset: str = "all_minilm_l6_v2_en"
    pooling: str = setting("mean", one_of(POOLINGS))
    dropout: float = setting(0.1, fraction())
    backbone_training: str = setting("trainable", one_of(BACKBONE_TRAINING))
    head_epochs: int = setting(1, at_least(1))
    head_learning_rate: float = setting(1e-3, above(0.0))
    lora_rank: int = setting(8, at_least(1))
    num_classes: int = setting(2, at_least(2), derived=True)
    multi_label: bool = setting(False, derived=True)  # one sigmoid per label (set by kpipe)


def pretrained_preset(model) -> tuple[str, str]:
    """The pretrained preset a model config names and the config key that holds it, or ("", "") if none:
    "model.preset", or "model.sequence.preset" for an ensemble's encoder member."""
    member = getattr(model, "sequence", model)
    preset = getattr(member, "preset", "")
    if not preset:
        return "", ""
    return preset, "model.sequence.preset" if member is not model else "model.preset"
