"""LinearAttention against a direct NumPy evaluation of its formula, and a save/load round trip (padding
invariance and causality of every variant: test_attention_variants.py)."""

import keras
import numpy as np
import pytest

from kpipe.layers.linear_attention import LinearAttention

HEADS, KEY_DIM, WIDTH = 2, 3, 5


def numpy_linear_attention(layer, x, mask, causal, feature_map):
    """out_i = Σ_j φ(q_i)·φ(k_j) v_j / Σ_j φ(q_i)·φ(k_j), over unmasked j (and j ≤ i when causal), per head;
    written pair by pair, the O(N²) way, independently of the layer's reordered sums."""
    def dense(sub, inputs):
        kernel, bias = (w.numpy() for w in sub.weights)
        return inputs @ kernel + bias

    phi = (lambda z: np.where(z > 0, z, np.expm1(z)) + 1.0) if feature_map == "elu" else (lambda z: np.maximum(z, 0))
    batch, time, _ = x.shape
    q = phi(dense(layer.query, x)).reshape(batch, time, HEADS, KEY_DIM)
    k = phi(dense(layer.key, x)).reshape(batch, time, HEADS, KEY_DIM)
    v = dense(layer.value, x).reshape(batch, time, HEADS, KEY_DIM)
    heads = np.zeros_like(v)
    for b in range(batch):
        for h in range(HEADS):
            for i in range(time):
                weights = np.array([q[b, i, h] @ k[b, j, h] if mask[b, j] and (j <= i or not causal) else 0.0
                                    for j in range(time)])
                heads[b, i, h] = weights @ v[b, :, h] / (weights.sum() + layer.epsilon)
    return dense(layer.output_dense, heads.reshape(batch, time, HEADS * KEY_DIM))


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("feature_map", ["elu", "relu"])
def test_equals_the_formula_evaluated_pair_by_pair(causal, feature_map):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(3, 7, WIDTH)).astype("float32")
    mask = np.ones((3, 7), bool)
    mask[1, 5:] = False
    mask[2, 2:] = False
    layer = LinearAttention(HEADS, KEY_DIM, feature_map=feature_map, causal=causal)
    out = layer(x, mask=mask).numpy()
    expected = numpy_linear_attention(layer, x.astype("float64"), mask, causal, feature_map)
    np.testing.assert_allclose(out[mask], expected[mask], rtol=1e-4, atol=1e-5)


def test_saves_and_loads_inside_a_model(tmp_path):
    inputs = keras.Input((None,), dtype="int32")
    embedded = keras.layers.Embedding(20, WIDTH, mask_zero=True)(inputs)
    outputs = LinearAttention(HEADS, KEY_DIM, feature_map="relu", causal=True)(embedded)
    model = keras.Model(inputs, outputs)
    ids = np.array([[3, 4, 5, 0, 0]])
    model.save(tmp_path / "m.keras")
    loaded = keras.saving.load_model(tmp_path / "m.keras")
    np.testing.assert_allclose(loaded(ids).numpy(), model(ids).numpy(), rtol=1e-6)
    assert loaded.layers[-1].get_config()["causal"] is True


def test_an_unknown_feature_map_names_the_known_ones():
    with pytest.raises(ValueError, match=r"feature_map must be one of \('elu', 'relu'\). Received: feature_map='exp'"):
        LinearAttention(2, 3, feature_map="exp")


@pytest.mark.parametrize("feature_map", ["elu", "relu"])
def test_the_recurrent_form_step_by_step_equals_the_causal_formula(feature_map):
    """`step` from `initial_state`, token after token, gives the pair-by-pair formula's causal outputs, and
    `state_of` a prefix gives the state the steps reach (the generation path of `gpt` with linear attention)."""
    rng = np.random.default_rng(1)
    x = rng.normal(size=(2, 6, WIDTH)).astype("float32")
    layer = LinearAttention(HEADS, KEY_DIM, feature_map=feature_map, causal=True)
    layer(x)
    expected = numpy_linear_attention(layer, x, np.ones((2, 6), bool), True, feature_map)
    state, outputs = layer.initial_state(2), []
    for t in range(6):
        out, state = layer.step(x[:, t], state)
        outputs.append(keras.ops.convert_to_numpy(out))
        if t == 3:
            at_four = layer.state_of(x[:, :4], layer.initial_state(2))
            for part, stepped in zip(at_four, state):
                np.testing.assert_allclose(keras.ops.convert_to_numpy(part), keras.ops.convert_to_numpy(stepped),
                                           rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.stack(outputs, axis=1), expected, rtol=1e-4, atol=1e-5)
