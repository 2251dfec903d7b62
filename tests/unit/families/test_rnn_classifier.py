import keras
import numpy as np
import pytest

from kpipe.families.rnn_classifier.config import RNNClassifierConfig
from kpipe.families.rnn_classifier.model import build_rnn_classifier

TOKENS = np.array([[3, 4, 5, 0, 0], [6, 7, 0, 0, 0], [8, 9, 3, 4, 5]], dtype="int32")


@pytest.mark.parametrize("num_classes, width", [(2, 1), (4, 4)])
@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_output_shapes_and_probabilities(num_classes, width, cell):
    model = build_rnn_classifier(RNNClassifierConfig(vocabulary_size=10, num_classes=num_classes, cell=cell,
                                                     units=(8, 4), embedding_dim=6))
    out = model(TOKENS).numpy()
    assert out.shape == (3, width)
    assert ((out >= 0) & (out <= 1)).all()
    if width > 1:
        np.testing.assert_allclose(out.sum(axis=1), 1.0, rtol=1e-5)


@pytest.mark.parametrize("pooling", ["last", "max", "mean", "max_mean"])
def test_extra_right_padding_does_not_change_outputs(pooling):
    model = build_rnn_classifier(RNNClassifierConfig(vocabulary_size=10, num_classes=3, units=(8,), pooling=pooling))
    padded = np.pad(TOKENS, [[0, 0], [0, 7]])
    np.testing.assert_allclose(model(TOKENS).numpy(), model(padded).numpy(), atol=1e-6)


def test_pooled_head_sees_every_step_of_the_last_layer():
    """max_mean: the head's input is [masked max, masked mean] of the last layer's outputs (2 x 2 x units)."""
    model = build_rnn_classifier(RNNClassifierConfig(vocabulary_size=10, num_classes=3, units=(4,),
                                                     pooling="max_mean"))
    pooled = model.get_layer("pooled").output
    assert pooled.shape == (None, 16)
    features = keras.Model(model.inputs, [model.get_layer("bidirectional_0").output, pooled])
    outputs, head_input = (t.numpy() for t in features(TOKENS[:1]))
    steps = outputs[0, :3]  # the first text has three tokens
    np.testing.assert_allclose(head_input[0], np.concatenate([steps.max(axis=0), steps.mean(axis=0)]), rtol=1e-5,
                               atol=1e-6)


def test_pretrained_embedding_initializer_and_freezing():
    table = np.arange(10 * 3, dtype="float32").reshape(10, 3)
    model = build_rnn_classifier(RNNClassifierConfig(vocabulary_size=10, embedding_dim=3, units=(2,)),
                                 embeddings_initializer=keras.initializers.Constant(table),
                                 trainable_embeddings=False)
    embedding = model.get_layer("embedding")
    np.testing.assert_array_equal(embedding.embeddings.numpy(), table)
    assert embedding.embeddings.path not in [w.path for w in model.trainable_weights]


@pytest.mark.parametrize("kwargs, message", [
    ({"cell": "lstn"}, r"Received: cell='lstn' \(did you mean 'lstm'\?\)"),
    ({"units": ()}, r"`units` must list at least one layer size"),
    ({"units": (8, 0)}, r"`units` must be ≥ 1\. Received: units=0"),
    ({"dropout": 1.0}, r"`dropout` must be ≥ 0\.0 and < 1\.0\. Received: dropout=1\.0"),
    ({"num_classes": 1}, r"`num_classes` must be ≥ 2"),
])
def test_bad_config_values_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        RNNClassifierConfig(**kwargs)


def test_a_pair_model_reads_both_texts_with_one_encoder_into_u_v_their_difference_and_product():
    import keras

    from kpipe.layers.pair_features import PairFeatures

    model = build_rnn_classifier(RNNClassifierConfig(vocabulary_size=30, num_classes=3, units=(4,), text_pairs=True,
                                                     pooling="mean"))
    ids = np.array([[[3, 4, 0], [5, 0, 0]], [[3, 4, 6], [7, 8, 9]]], np.int32)
    encoder = model.get_layer("sentence_encoder")
    u, v = encoder(ids[:, 0]).numpy(), encoder(ids[:, 1]).numpy()
    combined = keras.Model(model.inputs, model.get_layer("pair_features").output)(ids).numpy()
    np.testing.assert_allclose(combined, np.concatenate([u, v, np.abs(u - v), u * v], axis=1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(model(np.pad(ids, [[0, 0], [0, 0], [0, 5]])), model(ids), atol=1e-6)  # masked
    assert isinstance(model.get_layer("pair_features"), PairFeatures)
