"""The transformer classifier: padding never changes the output, pooling pinned to NumPy, config errors."""

import numpy as np
import pytest

from kpipe.families.transformer_classifier.config import TransformerClassifierConfig
from kpipe.families.transformer_classifier.model import build_transformer_classifier


@pytest.mark.parametrize("attention", ["softmax", "linear"])
@pytest.mark.parametrize("position_encoding", ["learned", "sine"])
@pytest.mark.parametrize("pooling", ["mean", "cls"])
def test_right_padding_does_not_change_the_output_and_empty_texts_are_finite(position_encoding, pooling, attention):
    model = build_transformer_classifier(TransformerClassifierConfig(
        vocabulary_size=50, num_classes=3, sequence_length=10, hidden_dim=16, num_heads=2, intermediate_dim=32,
        position_encoding=position_encoding, pooling=pooling, attention=attention))
    short = model(np.array([[5, 6, 7]]), training=False).numpy()
    padded = model(np.array([[5, 6, 7, 0, 0, 0]]), training=False).numpy()
    np.testing.assert_allclose(short, padded, rtol=1e-5, atol=1e-6)
    assert np.isfinite(model(np.zeros((2, 4), "int32"), training=False).numpy()).all()
    assert model.output_shape == (None, 3)


def test_heads_that_do_not_divide_the_hidden_size_are_caught_before_building():
    with pytest.raises(ValueError, match=r"num_heads.*divide.*hidden_dim=30, num_heads=4"):
        TransformerClassifierConfig(hidden_dim=30, num_heads=4)


@pytest.mark.parametrize("attention", ["softmax", "linear"])
def test_masked_lm_encoder_weights_move_into_a_classifier_by_name(attention):
    from kpipe.families.transformer_classifier.model import build_masked_lm, encoder_weights

    config = TransformerClassifierConfig(vocabulary_size=40, num_classes=2, sequence_length=8, hidden_dim=8,
                                         num_heads=2, intermediate_dim=8, pooling="cls", attention=attention)
    masked_lm = build_masked_lm(config)
    ids = np.array([[5, 6, 7, 8, 0], [9, 4, 10, 0, 0]], "int32")
    probabilities = masked_lm({"token_ids": ids, "mask_positions": np.array([[1, 2], [0, 2]], "int32")})
    assert probabilities.shape == (2, 2, 40)  # a distribution over the vocabulary at each masked position
    classifier = build_transformer_classifier(config)
    for name, weights in encoder_weights(masked_lm).items():
        classifier.get_layer(name).set_weights(weights)
    import keras

    features = keras.Model(classifier.input, classifier.get_layer("encoder_output").output)
    np.testing.assert_allclose(features(ids, training=False), masked_lm.get_layer("encoder")(ids, training=False),
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("attention, options, layer_class", [
    ("linear", {"feature_map": "relu"}, "LinearAttention"),
    ("random_features", {"num_random_features": 16, "redraw": "every_step"}, "RandomFeatureAttention"),
    ("fmm", {"band_width": 2, "fmm_rank": 1}, "FMMAttention"),
])
def test_each_attention_builds_its_own_layer(attention, options, layer_class):
    """The configured attention is the one the encoder blocks compute with. Training, SavedModel and .keras
    round trips of each variant are the family harness's (tests/unit/families/harness.py)."""
    model = build_transformer_classifier(TransformerClassifierConfig(
        vocabulary_size=30, num_classes=2, sequence_length=6, hidden_dim=8, num_heads=2, intermediate_dim=16,
        attention=attention, **options))
    assert type(model.get_layer("transformer_encoder_0").attention).__name__ == layer_class


def test_an_unknown_attention_is_a_config_error():
    with pytest.raises(ValueError, match="attention"):
        TransformerClassifierConfig(attention="performer")
