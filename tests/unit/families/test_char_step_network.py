"""The char generator's one-step networks (its portable export) give the trained model's logits at every filled
position, for each cell, conditioning and depth, after conversion to ONNX and LiteRT (read by the portable runtime).
tests/e2e/test_names_end_to_end.py checks a trained LSTM's export end to end."""

import json

import numpy as np
import pytest

from kpipe.exports.portable_networks import write_keras_network
from kpipe.families.char_rnn.config import CharGeneratorConfig
from kpipe.families.char_rnn.model import build_char_generator
from kpipe.families.char_rnn.step_network import start_network, step_network
from kpipe.portable.generator import PortableGenerator

CASES = [("lstm", "every_step", (8,)), ("gru", "none", (8, 6)), ("gru", "initial_state", (8, 6)),
         ("lstm", "initial_state", (6, 5))]


def buffers(rng):
    chars = np.zeros((4, 7), np.int32)
    chars[:, 0] = 1  # START, then characters (row 3: START alone)
    for row, length in enumerate((6, 3, 1)):
        chars[row, 1:1 + length] = rng.integers(4, 20, length)
    return chars, np.array([0, 2, 1, 2], np.int32)


def randomized(model, rng):
    model.set_weights([rng.normal(0, 0.5, w.shape).astype("float32") for w in model.get_weights()])
    return model


@pytest.mark.parametrize("cell, conditioning, units", CASES)
def test_stepping_the_cells_gives_the_models_logits_in_every_format(cell, conditioning, units, tmp_path):
    rng = np.random.default_rng(0)
    model = randomized(build_char_generator(CharGeneratorConfig(
        vocabulary_size=20, num_categories=3, cell=cell, units=units, conditioning=conditioning, embedding_dim=5,
        category_dim=4)), rng)
    chars, category = buffers(rng)
    expected = np.asarray(model([chars, category]))
    start, step = start_network(model), step_network(model)
    assert (start is None) == (conditioning != "initial_state")
    for fmt, network in (("onnx", "model.onnx"), ("litert", "model.tflite")):
        folder = tmp_path / fmt
        folder.mkdir()
        spec = {"kind": "char_steps", "network": network, "start": f"start_{network}" if start else "",
                "sequence_length": 7}
        write_keras_network(step, folder / network, fmt, "none", spec)
        if start is not None:
            write_keras_network(start, folder / spec["start"], fmt, "none", spec)
        (folder / "preprocessing.json").write_text(json.dumps(spec))
        (folder / "generator.json").write_text(json.dumps({"characters": [chr(97 + i) for i in range(16)],
                                                           "categories": ["a", "b", "c"], "max_length": 6,
                                                           "lowercase": False}))
        (folder / "kpipe.json").write_text(json.dumps({"task": "generate", "format": fmt}))
        got = PortableGenerator.open(folder).logits(chars, category)
        filled = chars != 0  # (after a name's end the sampler stops: padded positions are never read)
        np.testing.assert_allclose(got[filled], expected[filled], atol=1e-4,
                                   err_msg=f"{fmt}: {cell}, {conditioning}, {units}")
