"""The causal character transformer: no look-ahead and padding invariance for every attention variant,
learning a toy language, and the in-graph sampler against a plain step-by-step loop over the Keras model."""

import numpy as np
import pytest
import tensorflow as tf

from kpipe.families.char_sampling import END, START
from kpipe.families.char_transformer.config import CharTransformerConfig
from kpipe.families.char_transformer.model import CharTransformerSampler, build_char_transformer

VOCABULARY, MAX_LENGTH = 12, 8


def small(attention="softmax", **extra):
    return CharTransformerConfig(vocabulary_size=VOCABULARY, num_categories=3, sequence_length=MAX_LENGTH + 1,
                                 hidden_dim=16, num_heads=2, intermediate_dim=32, dropout=0.0, attention=attention,
                                 **extra)


ATTENTIONS = ["softmax", "linear", "random_features", "fmm"]


@pytest.mark.parametrize("attention", ATTENTIONS)
def test_a_position_never_sees_later_characters_or_padding(attention):
    model = build_char_transformer(small(attention, band_width=2))
    rng = np.random.default_rng(0)
    ids = rng.integers(4, VOCABULARY, size=(2, MAX_LENGTH + 1)).astype("int32")
    ids[:, 0] = START
    category = np.array([0, 2], "int32")
    changed = ids.copy()
    changed[:, 5:] = rng.integers(4, VOCABULARY, size=(2, MAX_LENGTH - 4))
    before, after = model([ids, category]).numpy(), model([changed, category]).numpy()
    np.testing.assert_allclose(after[:, :5], before[:, :5], rtol=1e-5, atol=1e-5)
    assert not np.allclose(after[:, 5:], before[:, 5:], atol=1e-4)  # later positions do change
    padded = ids.copy()
    padded[:, 5:] = 0  # a shorter name, right-padded
    np.testing.assert_allclose(model([padded, category]).numpy()[:, :5], before[:, :5], rtol=1e-5, atol=1e-5)


def test_the_category_changes_the_prediction():
    model = build_char_transformer(small())
    ids = np.array([[START, 5, 6]], "int32")
    assert not np.allclose(model([ids, np.array([0], "int32")]).numpy(), model([ids, np.array([1], "int32")]).numpy())


@pytest.mark.slow
def test_learns_a_toy_language():
    """Names are a category's letter repeated: after training, the model's next-character NLL is far below
    the uniform guess (the padding is left out of the loss)."""
    import keras

    rng = np.random.default_rng(1)
    category = rng.integers(0, 3, size=256).astype("int32")
    lengths = rng.integers(2, 6, size=256)
    inputs = np.zeros((256, MAX_LENGTH + 1), "int32")
    targets = np.zeros_like(inputs)
    for row, (c, n) in enumerate(zip(category, lengths)):
        name = [START] + [4 + c] * n + [END]
        inputs[row, :n + 1], targets[row, :n + 1] = name[:-1], name[1:]
    model = build_char_transformer(small())
    model.compile(optimizer=keras.optimizers.Adam(0.01),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0))
    model.fit([inputs, category], targets, epochs=15, batch_size=32, verbose=0)
    assert model.evaluate([inputs, category], targets, verbose=0) < 0.5 * np.log(VOCABULARY)


@pytest.mark.parametrize("attention", ["softmax", "linear"])
def test_greedy_sampler_equals_a_step_by_step_loop(attention):
    """top_k = 1 makes sampling deterministic: the in-graph sampler on its fixed buffer must give what calling
    the model on the growing sequence, one character at a time, gives."""
    model = build_char_transformer(small(attention))
    sampler = CharTransformerSampler(model, small(attention), MAX_LENGTH)
    prefix = [5, 7]
    got = sampler.sample_ids(tf.constant(prefix, tf.int32), tf.constant(1), tf.constant(3), tf.constant(1.0),
                             tf.constant(1), tf.constant(0)).numpy()
    sequence, expected = [START] + prefix, []
    while len(expected) < MAX_LENGTH - len(prefix):
        logits = model([np.array([sequence], "int32"), np.array([1], "int32")]).numpy()[0, -1]
        logits[[0, 1, 3]] = -np.inf  # never padding, START or UNKNOWN
        expected.append(int(np.argmax(logits)))
        if expected[-1] == END:
            break
        sequence.append(expected[-1])
    expected += [0] * (MAX_LENGTH - len(prefix) - len(expected))
    assert got.shape == (3, MAX_LENGTH - len(prefix))
    for row in got:
        np.testing.assert_array_equal(row, expected)


def test_a_bad_setting_is_a_config_error():
    with pytest.raises(ValueError, match="conditioning"):
        CharTransformerConfig(conditioning="initial_state")
    with pytest.raises(ValueError, match="num_heads"):
        CharTransformerConfig(hidden_dim=30, num_heads=4)
