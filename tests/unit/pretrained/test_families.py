"""Encoder families beyond BERT through the same `model.preset` path: DistilBERT (no segment ids) and RoBERTa
(a byte-pair tokenizer, <s> … </s>), each a tiny keras-hub preset made here. Their sentence embeddings are
the NumPy masked mean of the backbone's last layer, and the classifier on them trains."""

import numpy as np
import pytest
import tensorflow as tf

from kpipe.models.configs import PretrainedClassifierConfig, SentenceEncoderConfig
from kpipe.pretrained import inputs, presets
from kpipe.pretrained.classifier import build_pretrained_classifier
from kpipe.pretrained.encoder import build_sentence_encoder
from tests.helpers import write_distil_bert_preset, write_roberta_preset

TEXTS = ["good movie", "bad crew delay", "the flight was good good good", ""]


@pytest.mark.parametrize("write, backbone_class, inputs_expected", [
    (write_distil_bert_preset, "DistilBertBackbone", {"token_ids", "padding_mask"}),
    (write_roberta_preset, "RobertaBackbone", {"token_ids", "padding_mask"}),
])
def test_a_family_embeds_as_numpy_says_and_its_classifier_trains(tmp_path, write, backbone_class, inputs_expected):
    folder = str(tmp_path / "preset")
    original = write(tmp_path / "preset", seed=1)
    x = inputs.encode(presets.load_preprocessor(folder, 32), tf.constant(TEXTS))
    assert set(x) == inputs_expected and x["token_ids"].shape[1] < 32  # cut to the longest text
    loaded = presets.load_backbone(folder)
    assert type(loaded).__name__ == backbone_class

    outputs = original(x)
    sequence = (outputs["sequence_output"] if isinstance(outputs, dict) else outputs).numpy().astype(np.float64)
    mask = x["padding_mask"].numpy()[..., None].astype(np.float64)
    expected = (sequence * mask).sum(axis=1) / mask.sum(axis=1)
    encoder = build_sentence_encoder(SentenceEncoderConfig(preset=folder, normalize=False), loaded)
    np.testing.assert_allclose(encoder(x).numpy(), expected, atol=1e-5)

    classifier = build_pretrained_classifier(PretrainedClassifierConfig(preset=folder, num_classes=3),
                                             presets.load_backbone(folder))
    classifier.compile("adam", "sparse_categorical_crossentropy")
    labels = np.array([2, 0, 2, 1])
    before = classifier.evaluate(x, labels, verbose=0)
    for _ in range(5):
        classifier.train_on_batch(x, labels)
    assert classifier.evaluate(x, labels, verbose=0) < before
