"""names-char on a slice of the real names: report, plain-TF generate signature, CLI and its mistakes."""

import json

import pytest
import tensorflow as tf

from kpipe.cli.commands import main
from tests.helpers import kpipe, kpipe_in_process, served_in_thread

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    folder = tmp_path_factory.mktemp("names")
    code, printed = kpipe_in_process("run", "names-char", "--set", "training.epochs=1", "--set", "data.limit=3000",
                                     "--set", "model.units=[32]", "--set",
                                     'data.categories=["italy", "japan", "germany"]', cwd=folder)
    assert code == 0
    assert "nats/char" in printed and "vs bigram" in printed
    return folder, folder / "saved_models" / "names-char" / "1"


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


def test_names_transformer_runs_end_to_end_and_generates(tmp_path, monkeypatch):
    """The causal transformer through the same pipeline: report beside the bigram, export with the same
    `generate` signature, a prefix kept and names that end."""
    monkeypatch.chdir(tmp_path)  # in-process: the fixture runs the real command
    assert main(["run", "names-transformer", "--set", "training.epochs=1", "--set", "data.limit=800",
                 "--set", "model.hidden_dim=16", "--set", "model.intermediate_dim=32",
                 "--set", "model.attention=linear", "--set", 'data.categories=["italy", "japan"]']) == 0
    export = tmp_path / "saved_models" / "names-transformer" / "1"
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
