"""Encoder families beyond BERT through the same `model.preset` path: DistilBERT (no segment ids), RoBERTa
(a byte-pair tokenizer, <s> … </s>), ELECTRA (no classifier preprocessor in keras-hub: packed as BERT is) and
DeBERTa-v3 (a SentencePiece tokenizer), each a tiny keras-hub preset made here. Their sentence embeddings are
the NumPy masked mean of the backbone's last layer, and the classifier on them trains."""

import numpy as np
import pytest
import tensorflow as tf

from kpipe.families.pretrained_classifier.config import PretrainedClassifierConfig
from kpipe.families.sentence_encoder.config import SentenceEncoderConfig
from kpipe.pretrained import inputs, presets
from kpipe.families.pretrained_classifier.model import build_pretrained_classifier
from kpipe.families.sentence_encoder.model import build_sentence_encoder
from tests.checkpoints import (write_deberta_v3_preset, write_distil_bert_preset, write_electra_preset,
    write_keras_hub_preset, write_roberta_preset)

TEXTS = ["good movie", "bad crew delay", "the flight was good good good", ""]


@pytest.mark.parametrize("write, backbone_class, inputs_expected", [
    (write_distil_bert_preset, "DistilBertBackbone", {"token_ids", "padding_mask"}),
    (write_roberta_preset, "RobertaBackbone", {"token_ids", "padding_mask"}),
    (write_electra_preset, "ElectraBackbone", {"token_ids", "segment_ids", "padding_mask"}),
    (write_deberta_v3_preset, "DebertaV3Backbone", {"token_ids", "padding_mask"}),
])
@pytest.mark.slow
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


LONG = "the flight was good but the crew was bad and the delay was long"


@pytest.fixture(scope="module", params=[write_keras_hub_preset, write_roberta_preset], ids=["bert", "roberta"])
def family_preset(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp("family") / "preset"
    request.param(folder)
    return str(folder)


@pytest.mark.parametrize("truncating", ["pre", "post", "head_tail"])
def test_long_texts_are_cut_as_preprocessing_truncating_says_around_the_presets_special_tokens(
        family_preset, truncating):
    """keras-hub's preprocessor keeps a long text's first tokens; kpipe's "pre" keeps its last and "head_tail"
    a quarter from the front and the rest from the back, inside the preset's own special tokens."""
    keras_hub = presets.load_preprocessor(family_preset, 8)  # the preset's own: 2 special tokens + 6 of the text
    pieces = [int(i) for i in np.asarray(keras_hub.tokenizer(tf.constant([LONG])))[0]]
    assert len(pieces) > 6
    kept = {"pre": pieces[-6:], "post": pieces[:6], "head_tail": pieces[:1] + pieces[-5:]}[truncating]
    ours = inputs.with_truncation(keras_hub, truncating)(tf.constant([LONG, "good"]))
    expected = keras_hub(tf.constant(["good"]))  # a short text is packed exactly as the preset packs it
    assert set(ours) == set(expected)
    ids = ours["token_ids"].numpy()
    assert ids[0].tolist() == [keras_hub.tokenizer.start_token_id, *kept, keras_hub.tokenizer.end_token_id]
    for name in expected:
        np.testing.assert_array_equal(ours[name].numpy()[1], expected[name].numpy()[0])
