"""names-char on a slice of the real names: report, plain-TF generate signature, CLI and its mistakes; names-transformer;
both exported as ONNX and LiteRT and sampled without TensorFlow."""

import json
import shutil

import numpy as np
import pytest
import tensorflow as tf

from kpipe.cli.commands import main
from tests.helpers import kpipe, kpipe_in_process, kpipe_without
from tests.servers import served, served_in_thread

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def exported(task_run):
    run = task_run("generate")  # the task harness's run (tests/e2e/task_harness.py)
    assert "nats/char" in run.printed and "vs bigram" in run.printed
    return run.folder, run.export


def test_report_compares_with_the_bigram_and_counts_novelty(exported):
    _, export = exported
    metrics = json.loads((export / "metrics.json").read_text())
    assert metrics["data"]["categories"] == ["germany", "italy", "japan"]
    assert metrics["test_perplexity"] == pytest.approx(2.718281828 ** metrics["test_nll_per_char"])
    assert metrics["nll_reduction_vs_bigram"] == pytest.approx(
        1 - metrics["test_nll_per_char"] / metrics["bigram_nll_per_char"])
    assert 0 <= metrics["novelty"] <= 1 and metrics["novelty_sample_size"] == 300
    assert set(metrics["samples_temperature_0.8"]) == {"germany", "italy", "japan"}


def test_plain_tensorflow_generate_signature(exported):
    _, export = exported
    loaded = tf.saved_model.load(str(export))
    out = loaded.generate(prefix=tf.constant("Ma"), count=tf.constant(7), temperature=tf.constant(0.8),
                          category=tf.constant("italy"), top_k=tf.constant(0), seed=tf.constant(1))
    names = [n.decode("utf-8") for n in out["names"].numpy()]
    assert len(names) == 7 and all(n.startswith("Ma") and len(n) <= 20 for n in names)
    # reliability review round 5, finding 22: the prefix's length is checked before the prefix loop runs
    with pytest.raises(tf.errors.InvalidArgumentError, match="the prefix is too long"):
        loaded.generate(prefix=tf.constant("a" * 60_000), count=tf.constant(1024), temperature=tf.constant(0.8),
                        category=tf.constant("italy"), top_k=tf.constant(0), seed=tf.constant(1))


def test_cli_generate(exported, capsys, monkeypatch):
    folder, _ = exported
    args = ["generate", "names-char", "--prefix", "Al", "--count", "5", "--category", "japan", "--seed", "3", "--json"]
    run = kpipe(*args, cwd=folder)  # the command's real process
    assert run.returncode == 0, run.stderr[-2000:]
    names = json.loads(run.stdout)
    assert len(names) == 5 and all(n.startswith("Al") for n in names)
    monkeypatch.chdir(folder)
    assert main(args) == 0
    assert json.loads(capsys.readouterr().out) == names  # same seed, same names (in another process too)


GENERATE_MISTAKES = {
    "count 0": (["--count", "0"], "count must be > 0. Received: count=0"),
    "temperature 0": (["--temperature", "0"], "temperature must be > 0. Received: temperature=0.0"),
    "unknown category": (["--category", "itali"], "unknown category 'itali' (did you mean 'italy'?); "
                                                  "known: germany, italy, japan"),
    "unseen prefix characters": (["--prefix", "A☃✓"], "has character(s) this model never saw: '☃', '✓'"),
}


@pytest.mark.parametrize("case", GENERATE_MISTAKES)
def test_cli_generate_mistakes_are_one_line_exit_2(exported, capsys, monkeypatch, case):
    folder, _ = exported
    monkeypatch.chdir(folder)
    args, message = GENERATE_MISTAKES[case]
    assert main(["generate", "names-char", *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("kpipe: error: ") and message in err[0], err


def test_served_over_tf_serving_rest_in_the_columnar_format(exported):
    folder, export = exported
    inputs = {"prefix": "Ma", "count": 5, "temperature": 0.8, "category": "italy", "top_k": 0, "seed": 1}
    loaded = tf.saved_model.load(str(export))
    expected = [n.decode() for n in loaded.generate(**{k: tf.constant(v) for k, v in inputs.items()})["names"].numpy()]
    with served_in_thread("names-char", cwd=folder) as server:
        status, body = server.post("/v1/models/names-char:predict", {"inputs": inputs})
        assert status == 200 and body["outputs"] == expected, body  # one output: its value, as TF Serving sends
        status, body = server.post("/v1/models/names-char:predict", {"instances": [inputs]})
        assert status == 400 and 'send them in the columnar format, {"inputs": {"category": ...' in body["error"]
        status, body = server.post("/v1/models/names-char:predict", {"inputs": {**inputs, "count": 2.5}})
        assert status == 400 and "input 'count' must hold integers" in body["error"]
        status, body = server.post("/v1/models/names-char:predict", {"inputs": {**inputs, "count": 0}})
        assert status == 400 and body["error"].startswith("the model rejected the input: assertion failed: "
                                                          "[count must be > 0"), body


@pytest.fixture(scope="module")
def transformer_exported(tmp_path_factory):
    folder = tmp_path_factory.mktemp("names-transformer")
    code, _ = kpipe_in_process("run", "names-transformer", "--set", "training.epochs=1", "--set", "data.limit=800",
                               "--set", "model.hidden_dim=16", "--set", "model.intermediate_dim=32",
                               "--set", "model.attention=linear", "--set", 'data.categories=["italy", "japan"]',
                               cwd=folder)
    assert code == 0
    return folder, folder / "saved_models" / "names-transformer" / "1"


def test_names_transformer_runs_end_to_end_and_generates(transformer_exported):
    """The causal transformer through the same pipeline: report beside the bigram, export with the same
    `generate` signature, a prefix kept and names that end."""
    _, export = transformer_exported
    metrics = json.loads((export / "metrics.json").read_text())
    import tomllib

    model_section = tomllib.loads((export / "config.toml").read_text())["model"]
    assert model_section["family"] == "char_transformer" and model_section["attention"] == "linear"
    assert metrics["test_nll_per_char"] > 0 and metrics["bigram_nll_per_char"] > 0
    loaded = tf.saved_model.load(str(export))
    out = loaded.generate(prefix=tf.constant("Ma"), count=tf.constant(6), temperature=tf.constant(1.0),
                          category=tf.constant("japan"), top_k=tf.constant(0), seed=tf.constant(2))
    names = [n.decode("utf-8") for n in out["names"].numpy()]
    assert len(names) == 6 and all(n.startswith("Ma") and len(n) <= 20 for n in names)


# === Portable exports (ONNX, LiteRT): the network in its runtime, the sampling in NumPy ===

def greedy_names(loaded, prefix: str, category: str) -> list[str]:
    """The SavedModel's names when every step takes the likeliest character (top_k=1: no randomness)."""
    out = loaded.generate(prefix=tf.constant(prefix), count=tf.constant(2), temperature=tf.constant(1.0),
                          category=tf.constant(category), top_k=tf.constant(1), seed=tf.constant(0))
    return [n.decode("utf-8") for n in out["names"].numpy()]


@pytest.mark.parametrize("family", ["char_rnn", "char_transformer"])
def test_portable_generators_give_the_savedmodels_logits_and_greedy_names(family, exported, transformer_exported):
    """Float networks (the LSTM's one-step network stepped over the positions): the Keras model's logits within
    1e-4 on padded buffers; both formats (and an int8 one) pick the SavedModel's likeliest character at every
    step, so greedy names are the same."""
    from kpipe.exports.open import load_keras_model_file
    from kpipe.exports.portable import export_portable
    from kpipe.portable.generator import PortableGenerator

    _, source = exported if family == "char_rnn" else transformer_exported
    loaded, keras_model = tf.saved_model.load(str(source)), load_keras_model_file(source)
    categories = json.loads((source / "generator.json").read_text())["categories"]
    buffer = np.zeros((3, 21), np.int32)
    buffer[:, 0], buffer[0, 1:6], buffer[1, 1:3] = 1, [4, 5, 6, 7, 8], [9, 4]  # START, then characters; row 2 empty
    category_ids = np.array([0, 1, 0], np.int32)
    expected_logits = np.asarray(keras_model([buffer, category_ids]))
    for fmt, quantize in (("onnx", "none"), ("litert", "none"),
                          ("litert" if family == "char_rnn" else "onnx", "int8")):
        generator = PortableGenerator.open(export_portable(source, fmt, quantize))
        if quantize == "none":
            np.testing.assert_allclose(generator.logits(buffer, category_ids), expected_logits, atol=1e-4,
                                       err_msg=fmt)
        for prefix, category in (("", categories[0]), ("Ma", categories[1]), ("K", "")):
            expected = greedy_names(loaded, prefix, category)
            assert generator.generate(prefix, 2, 1.0, category, top_k=1, seed=0) == expected, (fmt, quantize)
        sampled = generator.generate("Ma", 20, 1.0, categories[0], seed=3)
        assert len(sampled) == 20 and all(n.startswith("Ma") and len(n) <= 20 for n in sampled)
        assert sampled == generator.generate("Ma", 20, 1.0, categories[0], seed=3)  # same seed, same names


def test_kpipe_generate_and_serve_a_portable_generator_without_tensorflow(exported, tmp_path):
    """`kpipe export` then `kpipe generate` in a process where TensorFlow cannot be imported; `kpipe serve` gives
    the SavedModel's `generate` signature and refuses a bad argument with a 400 naming it."""
    from kpipe.serving.repository import load_version

    folder, source = tmp_path, tmp_path / "saved_models" / "names-char" / "1"
    shutil.copytree(exported[1], source)  # the version alone: the other tests export beside it
    code, printed = kpipe_in_process("export", "names-char", "--format", "onnx", cwd=folder)  # its real process:
    assert code == 0 and "kpipe generate" in printed  # tests/e2e/test_portable_exports.py's
    portable = source.parent / "1-onnx"
    answered = kpipe_without(("tensorflow", "keras", "tf_keras", "pandas"),
                             ["generate", str(portable), "--prefix", "Ma", "--count", "2", "--top-k", "1",
                              "--category", "italy", "--json"])
    assert answered.returncode == 0, answered.stderr[-2000:]
    assert json.loads(answered.stdout) == greedy_names(tf.saved_model.load(str(source)), "Ma", "italy")
    saved, exported_signature = (load_version(path).signatures["generate"] for path in (source, portable))
    assert (exported_signature.inputs, exported_signature.outputs) == (saved.inputs, saved.outputs)
    inputs = {"prefix": "Ma", "count": 3, "temperature": 0.8, "category": "italy", "top_k": 0, "seed": 1}
    with served(f"names={portable}", cwd=folder, blocked=("tensorflow", "keras", "tf_keras")) as server:
        status, body = server.post("/v1/models/names:predict", {"inputs": inputs})
        assert status == 200 and len(body["outputs"]) == 3 and all(n.startswith("Ma") for n in body["outputs"]), body
        status, body = server.post("/v1/models/names:predict", {"inputs": {**inputs, "category": "itly"}})
        assert status == 400 and "unknown category 'itly' (did you mean 'italy'?)" in body["error"], body
    assert not any("Traceback" in line for line in server.lines), "".join(server.lines)[-3000:]
