"""The family harness (`harness.py`) run on every family: shapes at two sequence lengths, under the bfloat16 policy
too, a training step, the config through TOML and back, a SavedModel round trip, and the `.keras` round trip in a
fresh process (kpipe's loader with nothing of kpipe imported before)."""

import json
import pickle
import re
import subprocess
import sys
import tomllib

import keras
import numpy as np
import pytest
import tensorflow as tf

from kpipe.config.strict import dumps_toml, from_dict, to_dict
from kpipe.tasks.registry import TASKS
from tests.unit.families.harness import FAMILY_CASES, NOT_ONE_MODEL, compiled, example_inputs, example_targets


def outputs_of(model, inputs) -> np.ndarray:
    out = model(inputs, training=False)
    return keras.ops.convert_to_numpy(out)


def test_every_registered_family_has_a_case():
    registered = {family for spec in TASKS.values() for family in spec.models}
    covered = {case.family for case in FAMILY_CASES} | set(NOT_ONE_MODEL)
    assert registered <= covered, f"families without a FamilyCase in tests/unit/families/harness.py: " \
                                  f"{sorted(registered - covered)}"


@pytest.mark.parametrize("case", FAMILY_CASES, ids=repr)
def test_output_shape(case):
    out = outputs_of(case.build(), example_inputs(case.build()))
    assert len(out.shape) == len(case.output_shape), out.shape
    assert all(want is None or got == want for got, want in zip(out.shape, case.output_shape)), out.shape
    assert np.isfinite(out).all()


@pytest.mark.parametrize("case", FAMILY_CASES, ids=repr)
def test_one_model_takes_batches_of_other_lengths(case):
    """Batches are padded to their longest text, so one model sees many lengths (up to its positions, for the
    families that learn them): an output along the time axis follows the input's length, any other keeps its shape."""
    model = case.build()
    usual = outputs_of(model, example_inputs(model, length=5)).shape
    for length in (2, 3):
        out = outputs_of(model, example_inputs(model, length=length))
        expected = (usual[0], length, *usual[2:]) if usual[1:2] == (5,) else usual
        assert out.shape == expected and np.isfinite(out).all(), (length, out.shape, expected)


@pytest.fixture
def bfloat16_policy():
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    yield
    keras.mixed_precision.set_global_policy("float32")


@pytest.mark.parametrize("case", FAMILY_CASES, ids=repr)
def test_under_the_bfloat16_policy_outputs_stay_float32_and_finite(case, bfloat16_policy):
    """`training.precision = "auto"` trains in mixed bfloat16 where the CPU has it: every family must build under
    that policy, compute in bfloat16 and give float32 outputs (a softmax or a loss in bfloat16 loses too much)."""
    model = case.build()
    assert any(layer.compute_dtype == "bfloat16" for layer in model._flatten_layers()), "nothing runs in bfloat16"
    out = model(example_inputs(model), training=False)
    assert keras.backend.standardize_dtype(out.dtype) == "float32", out.dtype
    assert np.isfinite(keras.ops.convert_to_numpy(out)).all()


FAMILY_CONFIGS = {family: cls for spec in TASKS.values() for family, cls in spec.models.items()}


@pytest.mark.parametrize("family", sorted(FAMILY_CONFIGS))
def test_the_config_is_written_to_toml_and_read_back_equal(family):
    config = FAMILY_CONFIGS[family]()
    text = dumps_toml(to_dict(config))
    assert from_dict(FAMILY_CONFIGS[family], tomllib.loads(text)) == config, text


@pytest.mark.parametrize("case", FAMILY_CASES, ids=repr)
def test_training_steps_change_every_trainable_weight(case):
    model = case.build()
    if case.frozen:
        assert not model.trainable_weights, [w.path for w in model.trainable_weights]
        return
    inputs = example_inputs(model)
    targets = example_targets(case, outputs_of(model, inputs))
    compiled(case, model)
    before = [w.numpy().copy() for w in model.trainable_weights]
    assert before, "a trainable family with no trainable weights"
    for _ in range(case.training_steps):
        model.train_on_batch(inputs, targets)
    unchanged = [w.path for old, w in zip(before, model.trainable_weights) if np.array_equal(old, w.numpy())]
    assert not unchanged, unchanged


@pytest.mark.slow
@pytest.mark.parametrize("case", FAMILY_CASES, ids=repr)
def test_savedmodel_reload_gives_the_same_outputs(case, tmp_path):
    model = case.build()
    inputs = example_inputs(model)
    model.export(str(tmp_path / "saved"), format="tf_saved_model", verbose=False)
    reloaded = tf.saved_model.load(str(tmp_path / "saved"))
    served = reloaded.serve(keras.tree.map_structure(tf.constant, inputs))
    np.testing.assert_allclose(np.asarray(served), outputs_of(model, inputs), rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_every_family_loads_in_a_fresh_process_and_gives_the_same_outputs(tmp_path):
    """`kpipe.load_keras_model` in a process that imported nothing of kpipe before: the custom-layer registry
    must name every class a family saves."""
    expected = {}
    for case in FAMILY_CASES:
        model = case.build()
        folder = tmp_path / re.sub(r"\W", "_", case.name) / "1"  # a pipeline's folder of versions
        folder.mkdir(parents=True)
        inputs = example_inputs(model)
        model.save(folder / "model.keras")
        with open(folder / "inputs.pkl", "wb") as file:
            pickle.dump(inputs, file)
        expected[str(folder)] = (case.name, outputs_of(model, inputs))
    code = (
        "import json, pickle, sys, numpy as np, keras\nimport kpipe\nresult = {}\n"
        "for folder in sys.argv[1:]:\n"
        "    model = kpipe.load_keras_model(folder.rsplit('/', 1)[0])\n"
        "    inputs = pickle.load(open(folder + '/inputs.pkl', 'rb'))\n"
        "    out = model(inputs, training=False)\n"
        "    result[folder] = keras.ops.convert_to_numpy(out).tolist()\n"
        "print(json.dumps(result))\n")
    run = subprocess.run([sys.executable, "-c", code, *expected], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    loaded = json.loads(run.stdout.strip().splitlines()[-1])
    for folder, (name, outputs) in expected.items():
        np.testing.assert_allclose(np.asarray(loaded[folder]), outputs, rtol=1e-5, atol=1e-6, err_msg=name)
