"""The per-step warm-up schedule against its formula, and AdamW's weight decay left off biases and norms."""

import keras
import numpy as np
import pytest

from kpipe.config.training import TrainingConfig
from kpipe.training.loop import make_optimizer
from kpipe.training.schedules import LinearWarmupDecay


def test_linear_warmup_then_linear_decay_to_zero():
    schedule = LinearWarmupDecay(1e-3, warmup_steps=10, total_steps=110)
    steps = np.arange(0, 130)
    expected = np.where(steps < 10, 1e-3 * steps / 10, 1e-3 * np.maximum(0, 110 - steps) / 100)
    np.testing.assert_allclose([float(schedule(s)) for s in steps], expected, rtol=1e-6, atol=1e-12)
    assert LinearWarmupDecay.from_config(schedule.get_config()).get_config() == schedule.get_config()
    with pytest.raises(ValueError, match="warmup_steps=5, total_steps=5"):
        LinearWarmupDecay(1.0, 5, 5)


def test_the_optimizer_warms_up_over_its_phase_and_adamw_decays_only_weights():
    config = TrainingConfig(optimizer="adamw", learning_rate=0.1, weight_decay=0.5,
                            learning_rate_schedule="linear_warmup", warmup_fraction=0.25)
    optimizer = make_optimizer(config, 0.1, steps=8)
    assert optimizer.learning_rate.numpy() == 0.0  # step 0 of 2 warm-up steps
    dense, norm = keras.layers.Dense(2), keras.layers.LayerNormalization()
    model = keras.Sequential([keras.Input((3,)), dense, norm])
    before = {w.path: w.numpy().copy() for w in model.weights}
    # Zero gradients: Adam moves nothing, so what changes is the decay alone.
    for _ in range(2):
        optimizer.apply_gradients([(np.zeros(w.shape, "float32"), w) for w in model.trainable_weights])
    rates = [0.0, 0.1 * 1 / 2]  # the rate at steps 0 and 1
    factor = np.prod([1 - r * 0.5 for r in rates])
    np.testing.assert_allclose(dense.kernel.numpy(), before[dense.kernel.path] * factor, rtol=1e-6)
    for weight in (dense.bias, norm.gamma, norm.beta):
        np.testing.assert_array_equal(weight.numpy(), before[weight.path])
