import numpy as np
import pytest

from kpipe.layers.masked_pooling import MaskedMaxPooling, MaskedMeanPooling

# Negative values everywhere: a max that let padding (zeros) in would return 0, not the true maximum.
X = -np.abs(np.random.default_rng(0).normal(size=(3, 5, 4))).astype("float32") - 0.1
MASK = np.array([[True, True, False, False, False], [True, True, True, True, True], [False] * 5])


@pytest.mark.parametrize("layer, reduce", [(MaskedMeanPooling, np.mean), (MaskedMaxPooling, np.max)])
def test_pooling_matches_numpy_over_the_unmasked_steps(layer, reduce):
    out = layer()(X, mask=MASK).numpy()
    for row in range(2):
        np.testing.assert_allclose(out[row], reduce(X[row, MASK[row]], axis=0), rtol=1e-6)
    np.testing.assert_array_equal(out[2], np.zeros(4))  # an empty text pools to zeros, not NaN or -inf


@pytest.mark.parametrize("layer, reduce", [(MaskedMeanPooling, np.mean), (MaskedMaxPooling, np.max)])
def test_without_a_mask_every_step_counts(layer, reduce):
    np.testing.assert_allclose(layer()(X).numpy(), reduce(X, axis=1), rtol=1e-6)
