"""training.precision = "auto": bfloat16 where the CPU has bfloat16 units and no GPU is seen, float32 elsewhere."""

import keras
import pytest

from kpipe.config.training import TrainingConfig
from kpipe.training import precision


@pytest.mark.parametrize("flags, expected", [
    ("fpu vme sse avx2 avx512f avx512_bf16 avx512_vnni", True),   # AMD EPYC (Zen 4)
    ("fpu vme avx512f amx_bf16 amx_tile amx_int8", True),         # Intel Sapphire Rapids
    ("fpu vme sse avx2 avx512f avx512_vnni", False),              # AVX-512 without bfloat16
])
def test_the_cpu_flags_say_whether_bfloat16_units_exist(tmp_path, flags, expected):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(f"processor\t: 0\nmodel name\t: x\nflags\t\t: {flags}\n\nprocessor\t: 1\nflags\t\t: {flags}\n")
    assert precision.cpu_has_bfloat16_units(cpuinfo) is expected


def test_no_cpu_information_means_no_bfloat16(tmp_path):
    assert precision.cpu_has_bfloat16_units(tmp_path / "missing") is False


@pytest.mark.parametrize("has_units, expected", [(True, "mixed_bfloat16"), (False, "float32")])
def test_auto_resolves_by_the_cpu_and_explicit_choices_stay(monkeypatch, has_units, expected):
    monkeypatch.setattr(precision, "cpu_has_bfloat16_units", lambda: has_units)
    assert precision.resolve_precision("auto") == expected
    for explicit in ("float32", "mixed_float16", "mixed_bfloat16"):
        assert precision.resolve_precision(explicit) == explicit


def test_layers_built_in_the_scope_take_the_resolved_policy_and_the_old_one_returns(monkeypatch):
    monkeypatch.setattr(precision, "cpu_has_bfloat16_units", lambda: True)
    with precision.precision_scope("auto"):
        layer = keras.layers.Dense(2)
    assert layer.dtype_policy.name == "mixed_bfloat16"
    assert keras.config.dtype_policy().name == "float32"


def test_the_config_takes_auto_and_refuses_an_unknown_precision():
    assert TrainingConfig(precision="auto").precision == "auto"
    with pytest.raises(ValueError, match="auto"):
        TrainingConfig(precision="bfloat16")


def test_in_float32_copies_a_bfloat16_model_exactly_and_keeps_a_float32_one():
    import numpy as np

    def build():
        inputs = keras.Input((4,))
        return keras.Model(inputs, keras.layers.Dense(3, dtype=None)(keras.layers.Dense(5, activation="relu")(inputs)))

    with precision.precision_scope("mixed_bfloat16"):
        trained = build()
    x = np.random.default_rng(0).normal(size=(8, 4)).astype("float32")
    copy = precision.in_float32(trained, build)
    assert trained.compute_dtype == "bfloat16" and copy.compute_dtype == "float32"
    for ours, theirs in zip(copy.weights, trained.weights):
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())  # the variables were float32 all along
    exact = x @ trained.weights[0].numpy() + trained.weights[1].numpy()
    exact = np.maximum(exact, 0) @ trained.weights[2].numpy() + trained.weights[3].numpy()
    np.testing.assert_allclose(copy(x).numpy(), exact, rtol=1e-5, atol=1e-5)  # float32 arithmetic, not bfloat16's
    assert np.abs(np.asarray(trained(x), np.float32) - exact).max() > 1e-4
    float_model = build()
    assert precision.in_float32(float_model, build) is float_model
