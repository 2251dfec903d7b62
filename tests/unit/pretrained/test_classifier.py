"""The classifier on a pretrained backbone: pooling against NumPy, what each training mode trains, and the
inputs cut to each batch's longest text."""

import dataclasses

import numpy as np
import pytest
import tensorflow as tf

from kpipe.families.pretrained_classifier.config import PretrainedClassifierConfig
from kpipe.families.pretrained_classifier import model as classifier
from kpipe.pretrained import inputs, presets
from tests.checkpoints import write_keras_hub_preset

TEXTS = np.array(["good movie", "the flight crew was terrible and boring", "a", "great plot"])


@pytest.fixture(scope="module")
def preset(tmp_path_factory):
    folder = tmp_path_factory.mktemp("preset") / "tiny"
    write_keras_hub_preset(folder)
    return str(folder)


def build(preset, **options):
    config = PretrainedClassifierConfig(preset=preset, num_classes=3, dropout=0.0, **options)
    return classifier.build_pretrained_classifier(config, presets.load_backbone(preset))


def test_mean_pooling_is_the_masked_mean_of_the_last_layer_and_cls_the_pooled_output(preset):
    preprocessor = presets.load_preprocessor(preset, 16)
    x = inputs.encode(preprocessor, tf.constant(TEXTS))
    for pooling in ("mean", "cls"):
        model = build(preset, pooling=pooling)
        outputs = classifier.backbone_of(model)(x)
        sequence = outputs["sequence_output"].numpy()
        mask = x["padding_mask"].numpy().astype(np.float32)[..., None]
        expected = ((sequence * mask).sum(1) / mask.sum(1) if pooling == "mean"
                    else outputs["pooled_output"].numpy())
        np.testing.assert_allclose(classifier.embedding_model(model)(x).numpy(), expected, atol=1e-5)


def trainable(model):
    return {w.path for w in model.trainable_weights}


def test_frozen_trains_the_head_lora_the_adapters_and_two_phase_unfreezes(preset):
    head = {"probabilities/kernel", "probabilities/bias"}
    assert trainable(build(preset, backbone_training="frozen")) == head
    lora = trainable(build(preset, backbone_training="lora", lora_rank=2))
    adapters = {w for w in lora if "lora_kernel" in w}
    assert len(adapters) == 2 * 2 * 2  # (a, b) x (query, value) x 2 layers
    # keras' LoRA freezes the kernels it adapts and leaves their biases trainable: nothing else trains
    assert lora - head - adapters == {f"transformer_layer_{i}/self_attention_layer/{p}/bias"
                                      for i in range(2) for p in ("query", "value")}
    model = build(preset, backbone_training="two_phase")
    assert trainable(model) == head
    classifier.unfreeze_backbone(model)
    unfrozen = trainable(model)
    assert len(unfrozen) > 20 and not any("pooled_dense" in w for w in unfrozen)  # unused under mean pooling
    everything = trainable(build(preset, backbone_training="trainable", pooling="cls"))
    assert any("pooled_dense" in w for w in everything)


def test_batches_are_cut_to_their_longest_text_and_bucketed_by_length(preset):
    preprocessor = presets.load_preprocessor(preset, 32)
    lengths = inputs.token_lengths(TEXTS, preprocessor)
    assert lengths.tolist() == [4, 9, 3, 4]  # [CLS] ... [SEP]
    labels = np.arange(len(TEXTS)) % 3
    batches = list(inputs.make_pretrained_dataset(TEXTS, labels, preprocessor, batch_size=2))
    assert [b[0]["token_ids"].shape[1] for b in batches] == [9, 4]
    assert all(b[0]["token_ids"].dtype == tf.int32 and set(b[0]) == {"token_ids", "padding_mask", "segment_ids"}
               for b in batches)
    bucketed = list(inputs.make_pretrained_dataset(TEXTS, labels, preprocessor, batch_size=4, boundaries=[5]))
    assert sorted(b[0]["token_ids"].shape[1] for b in bucketed) == [4, 9]  # short texts apart from the long one


def test_the_config_names_the_bad_value():
    with pytest.raises(ValueError, match="backbone_training.*'unfrozen'"):
        PretrainedClassifierConfig(backbone_training="unfrozen")
    with pytest.raises(ValueError, match="lora_rank"):
        dataclasses.replace(PretrainedClassifierConfig(), lora_rank=0)
