"""Random-feature and FMM attention against direct NumPy evaluations of their formulas; random features
converging to exact softmax (and Gaussian-kernel) attention as their number grows; the banded near field equal
to Keras' own softmax attention restricted to the band; and, for every variant, padding invariance and no
look-ahead when causal."""

import keras
import numpy as np
import pytest

from kpipe.layers.attention_variants import VariantTransformerEncoder, attention_layer
from kpipe.layers.fmm_attention import FMMAttention, banded_softmax_attention
from kpipe.layers.random_feature_attention import RandomFeatureAttention

HEADS, KEY_DIM, WIDTH = 2, 4, 6
VARIANTS = {
    "linear": {},
    "random_features": {"num_features": 32, "seed": 3},
    "random_features_gaussian": {"num_features": 32, "seed": 3, "kernel": "gaussian"},
    "fmm": {"band_width": 2},
    "fmm_rank_1": {"band_width": 1, "rank": 1},
}


def make(variant, causal=False, **extra):
    name = "random_features" if variant.startswith("random_features") else variant.split("_rank")[0]
    return attention_layer(name, HEADS, KEY_DIM, causal=causal, **{**VARIANTS[variant], **extra})


def heads_of(layer, x):
    """The layer's q, k, v per head, computed in float64 NumPy from its weights."""
    def dense(sub):
        kernel, bias = (w.numpy().astype("float64") for w in sub.weights)
        return (x @ kernel + bias).reshape(*x.shape[:2], HEADS, KEY_DIM)
    return dense(layer.query), dense(layer.key), dense(layer.value)


def project_out(layer, heads):
    kernel, bias = (w.numpy().astype("float64") for w in layer.output_dense.weights)
    return heads.reshape(*heads.shape[:2], HEADS * KEY_DIM) @ kernel + bias


def pairwise_attention(scores, v, mask, causal, band=None, epsilon=0.0):
    """Σ_j s_ij v_j / Σ_j s_ij pair by pair over allowed keys j; scores: (batch, heads, time, time) ≥ 0."""
    batch, time = mask.shape
    out = np.zeros((batch, time, HEADS, KEY_DIM))
    for b in range(batch):
        for h in range(HEADS):
            for i in range(time):
                allowed = np.array([mask[b, j] and (j <= i or not causal) and (band is None or abs(i - j) <= band)
                                    for j in range(time)])
                weights = np.where(allowed, scores[b, h, i], 0.0)
                with np.errstate(invalid="ignore"):  # a padded query with no key in its band: never compared
                    out[b, i, h] = weights @ v[b, :, h] / (weights.sum() + epsilon)
    return out


def random_features_numpy(layer, x):
    """φ(x) = exp(W x − |x|²/2) / √m (softmax) or exp(W x − |x|²) / √m (Gaussian), x scaled by d^-¼."""
    w = layer.projection.numpy().astype("float64")
    x = x * KEY_DIM ** -0.25
    squared = (x ** 2).sum(-1, keepdims=True)
    return np.exp(x @ w.T - (squared / 2 if layer.kernel == "softmax" else squared)) / np.sqrt(len(w))


def inputs(seed, batch=3, time=7):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(batch, time, WIDTH)).astype("float32")
    mask = np.ones((batch, time), bool)
    mask[1, 5:] = False
    mask[2, 2:] = False
    return x, mask


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("kernel", ["softmax", "gaussian"])
def test_random_feature_attention_equals_its_formula(causal, kernel):
    x, mask = inputs(0)
    layer = RandomFeatureAttention(HEADS, KEY_DIM, num_features=16, kernel=kernel, causal=causal, seed=1,
                                   epsilon=1e-3)  # large enough to show, if it did not act as in the formula
    out = layer(x, mask=mask).numpy()
    q, k, v = heads_of(layer, x.astype("float64"))
    phi_q, phi_k = random_features_numpy(layer, q), random_features_numpy(layer, k)
    scores = np.einsum("bihf,bjhf->bhij", phi_q, phi_k)
    expected = project_out(layer, pairwise_attention(scores, v, mask, causal, epsilon=1e-3))
    np.testing.assert_allclose(out[mask], expected[mask], rtol=1e-4, atol=1e-5)


def exact_kernel_attention(layer, x, mask, kernel):
    q, k, v = heads_of(layer, x.astype("float64"))
    q, k = q * KEY_DIM ** -0.25, k * KEY_DIM ** -0.25
    if kernel == "softmax":
        scores = np.exp(np.einsum("bihd,bjhd->bhij", q, k))
    else:
        scores = np.exp(-((q[:, :, None] - k[:, None]) ** 2).sum(-1) / 2).transpose(0, 3, 1, 2)
    return pairwise_attention(scores, v, mask, causal=False)


@pytest.mark.parametrize("orthogonal", [True, False])
@pytest.mark.parametrize("kernel", ["softmax", "gaussian"])
def test_random_features_converge_to_exact_attention(kernel, orthogonal):
    """The error against the exact kernel's attention (per-head outputs, mean over 3 draws) shrinks as features
    are added, about as 1/√m for a Monte Carlo estimate: 512 times the features cut it well over 5 fold.
    (Orthogonal rows taken from QR without the sign fix were biased: their error stopped falling at 0.011.)"""
    x, mask = inputs(4, batch=4, time=12)
    errors = {}
    for m in (8, 64, 512, 4096):
        per_seed = []
        for seed in range(3):
            layer = RandomFeatureAttention(HEADS, KEY_DIM, num_features=m, kernel=kernel, seed=seed,
                                           orthogonal=orthogonal)
            layer.build(x.shape)
            for sub, seed_of_weights in ((layer.query, 10), (layer.key, 11), (layer.value, 12)):
                rng = np.random.default_rng(seed_of_weights)  # the same projections for every m and seed
                sub.set_weights([rng.normal(scale=0.2, size=w.shape).astype("float32") for w in sub.get_weights()])
            q, k, v = (keras.ops.convert_to_numpy(t) for t in
                       (layer._heads(layer.query(x)), layer._heads(layer.key(x)), layer._heads(layer.value(x))))
            approx = keras.ops.convert_to_numpy(layer.attend(q, k, v, mask))
            exact = exact_kernel_attention(layer, x, mask, kernel)
            per_seed.append(np.abs(approx - exact)[mask].mean())
        errors[m] = float(np.mean(per_seed))
    assert errors[8] > errors[64] > errors[512] > errors[4096], errors
    assert errors[4096] < errors[8] / 5, errors
    assert errors[4096] < 0.003, errors  # the outputs' mean magnitude is 0.18


def linear_scores(q, k, name):
    phi = {"elu": lambda z: np.where(z > 0, z, np.expm1(z)) + 1.0,
           "elu_negated": lambda z: np.where(-z > 0, -z, np.expm1(-z)) + 1.0}[name]
    return np.einsum("bihf,bjhf->bhij", phi(q), phi(k))


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("band_width, rank", [(0, 1), (2, 2), (10, 2)])
def test_fmm_attention_equals_its_formula(causal, band_width, rank):
    """w_near · softmax restricted to the band + w_far · mean of linear attention over the rank's feature maps,
    with w = softplus(field_weights), evaluated pair by pair."""
    x, mask = inputs(5)
    layer = FMMAttention(HEADS, KEY_DIM, band_width=band_width, rank=rank, causal=causal, epsilon=0.0)
    layer.build(x.shape)
    layer.field_weights.assign([0.3, -1.2])  # unequal weights, so swapping them would show
    out = layer(x, mask=mask).numpy()
    q, k, v = heads_of(layer, x.astype("float64"))
    scores = np.einsum("bihd,bjhd->bhij", q, k) / np.sqrt(KEY_DIM)
    near = pairwise_attention(np.exp(scores - scores.max()), v, mask, causal, band=band_width)
    far = sum(pairwise_attention(linear_scores(q, k, name), v, mask, causal)
              for name in ("elu", "elu_negated")[:rank]) / rank
    w_near, w_far = np.log1p(np.exp([0.3, -1.2]))
    expected = project_out(layer, w_near * near + w_far * far)
    np.testing.assert_allclose(out[mask], expected[mask], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("band_width", [0, 1, 3, 20])
def test_banded_part_equals_keras_softmax_attention_restricted_to_the_band(causal, band_width):
    """Against keras.ops.dot_product_attention (an independent implementation) with the band as its mask."""
    rng = np.random.default_rng(6)
    batch, time = 3, 9
    q, k, v = (rng.normal(size=(batch, time, HEADS, KEY_DIM)).astype("float32") for _ in range(3))
    key_mask = np.ones((batch, time), bool)
    key_mask[1, 6:] = False
    key_mask[2, 3:] = False
    ours = keras.ops.convert_to_numpy(banded_softmax_attention(q, k, v, band_width, causal, key_mask=key_mask))
    i, j = np.arange(time)[:, None], np.arange(time)[None, :]
    band = (np.abs(i - j) <= band_width) & ((j <= i) if causal else True)
    allowed = band[None, None] & key_mask[:, None, None, :]  # (batch, heads, query, key)
    allowed = np.broadcast_to(allowed, (batch, HEADS, time, time))
    reference = keras.ops.convert_to_numpy(keras.ops.dot_product_attention(q, k, v, mask=allowed))
    np.testing.assert_allclose(ours[key_mask], reference[key_mask], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_padded_keys_contribute_nothing(variant, causal):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(1, 5, WIDTH)).astype("float32")
    padded = np.concatenate([x, rng.normal(size=(1, 3, WIDTH)).astype("float32") * 100], axis=1)  # loud padding
    layer = make(variant, causal=causal)
    alone = layer(x).numpy()
    with_padding = layer(padded, mask=np.array([[True] * 5 + [False] * 3])).numpy()
    np.testing.assert_allclose(with_padding[:, :5], alone, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_causal_outputs_never_look_ahead(variant):
    rng = np.random.default_rng(2)
    x = rng.normal(size=(2, 8, WIDTH)).astype("float32")
    changed = x.copy()
    changed[:, 5:] = rng.normal(size=(2, 3, WIDTH))
    causal = make(variant, causal=True)
    np.testing.assert_allclose(causal(changed).numpy()[:, :5], causal(x).numpy()[:, :5], rtol=1e-5, atol=1e-6)
    full = make(variant)
    assert not np.allclose(full(changed).numpy()[:, :5], full(x).numpy()[:, :5], atol=1e-4)  # the check can fail


def test_redraw_every_step_draws_a_new_projection_in_training_only():
    x, mask = inputs(7)
    every_step = RandomFeatureAttention(HEADS, KEY_DIM, num_features=8, redraw="every_step", seed=0)
    fixed = RandomFeatureAttention(HEADS, KEY_DIM, num_features=8, seed=0)
    for layer in (every_step, fixed):
        layer(x, mask=mask)
    drawn = every_step.projection.numpy().copy()
    np.testing.assert_array_equal(fixed.projection.numpy(), drawn)  # the same seed draws the same W
    every_step(x, mask=mask, training=False)
    np.testing.assert_array_equal(every_step.projection.numpy(), drawn)  # inference keeps it
    every_step(x, mask=mask, training=True)
    assert not np.allclose(every_step.projection.numpy(), drawn)  # a training step draws anew
    fixed(x, mask=mask, training=True)
    np.testing.assert_array_equal(fixed.projection.numpy(), drawn)


@pytest.mark.parametrize("variant", ["random_features", "fmm"])
def test_encoder_block_saves_and_loads_inside_a_model(tmp_path, variant):
    options = {k: v for k, v in VARIANTS[variant].items() if k != "seed"}
    inputs_ = keras.Input((None,), dtype="int32")
    embedded = keras.layers.Embedding(20, 8)(inputs_)
    block = VariantTransformerEncoder(16, 2, attention=variant, attention_options=options, causal=True)
    model = keras.Model(inputs_, block(embedded, padding_mask=keras.ops.not_equal(inputs_, 0)))
    ids = np.array([[3, 4, 5, 0, 0], [7, 1, 2, 9, 4]])
    model.save(tmp_path / "m.keras")
    loaded = keras.saving.load_model(tmp_path / "m.keras")
    np.testing.assert_allclose(loaded(ids).numpy(), model(ids).numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("bad, message", [
    ({"attention": "performer"}, r"attention must be one of \('linear', 'random_features', 'fmm'\)"),
    ({"attention": "random_features", "kernel": "laplace"}, "kernel must be one of"),
    ({"attention": "random_features", "redraw": "sometimes"}, "redraw must be one of"),
    ({"attention": "fmm", "rank": 3}, "rank must be 1 or 2"),
    ({"attention": "fmm", "band_width": -1}, "band_width must be 0 or more"),
])
def test_bad_settings_name_the_choices(bad, message):
    bad = dict(bad)
    with pytest.raises(ValueError, match=message):
        attention_layer(bad.pop("attention"), HEADS, KEY_DIM, **bad)
