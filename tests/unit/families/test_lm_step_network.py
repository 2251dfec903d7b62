"""A language model's one-step network (its portable export, `kpipe.families.lm_step_network`) converted to ONNX and
stepped through a text one token at a time, its state fed back, gives the whole model's logits at every position.

Here for `gpt` with linear attention (its running sums as the state); the task harness's ONNX check pins `gpt`
with softmax attention (key/value caches) and tests/e2e/test_lm_portable.py an `rnn_lm` (cell states), both through
a trained run's export."""

import numpy as np
import pytest
import tensorflow as tf

from kpipe.exports.portable_networks import write_keras_network
from kpipe.families.gpt.config import GPTConfig
from kpipe.families.lm_step_network import step_network
from kpipe.portable.network import open_network
from kpipe.tasks.registry import family_spec

CONTEXT = 12


@pytest.mark.slow  # converts a model to ONNX
def test_linear_attentions_step_network_in_onnx_gives_the_models_logits_at_every_position(tmp_path):
    tf.keras.utils.set_random_seed(0)
    config = GPTConfig(vocabulary_size=40, max_sequence_length=CONTEXT, num_layers=2, num_heads=2, hidden_dim=16,
                       intermediate_dim=32, dropout=0.3, attention="linear")  # dropout: stepping must not apply it
    spec = family_spec("lm", config.family)
    model = spec.build(config)
    ids = np.random.default_rng(0).integers(1, 40, CONTEXT).astype("int32")
    expected = model({"token_ids": ids[None], "padding_mask": np.ones((1, CONTEXT), bool)}, training=False).numpy()[0]

    path = tmp_path / "step.onnx"
    write_keras_network(step_network(model, spec.decoding()(model, config), CONTEXT), path, "onnx", "none",
                        {"kind": "lm_steps"})
    network = open_network(path, "onnx")
    shapes = network.input_shapes()
    names = sorted((name for name in shapes if name.startswith("state_")), key=lambda name: int(name[6:]))
    states = {name: np.zeros((1, *shapes[name][1:]), np.float32) for name in names}
    assert states  # the running sums: without them every position would read as the first
    for position, token in enumerate(ids):
        logits, *new = network.outputs({"token": np.array([token], np.int32),
                                        "index": np.array([position], np.int32), **states})
        np.testing.assert_allclose(np.asarray(logits)[0], expected[position], atol=1e-4, err_msg=f"position {position}")
        states = dict(zip(names, new))
