"""Every family's model.keras opens in a fresh process through `kpipe.load_keras_model`, and every kpipe
module that registers a Keras-serializable class is in the one registry the loader imports."""

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import kpipe
from kpipe.exports.custom_layers import CUSTOM_LAYER_MODULES

PACKAGE = Path(kpipe.__file__).parent


def registering_modules() -> set[str]:
    found = set()
    for path in PACKAGE.rglob("*.py"):
        if re.search(r"^@keras\.saving\.register_keras_serializable", path.read_text(encoding="utf-8"), re.M):
            found.add("kpipe." + ".".join(path.relative_to(PACKAGE).with_suffix("").parts))
    return found


def test_every_module_that_registers_keras_classes_is_in_the_registry():
    modules = registering_modules()
    assert "kpipe.models.char_transformer" in modules  # the module the loader once missed
    assert modules <= set(CUSTOM_LAYER_MODULES), sorted(modules - set(CUSTOM_LAYER_MODULES))


def family_models():
    """One small model per family, with the custom layers each family can save."""
    from kpipe.models.bag_of_ngrams import build_bag_of_ngrams
    from kpipe.models.char_generator import build_char_generator
    from kpipe.models.char_transformer import build_char_transformer
    from kpipe.models.configs import (BagOfNgramsConfig, CharGeneratorConfig, CharTransformerConfig,
                                      RNNClassifierConfig, RNNForecasterConfig, Seq2SeqConfig,
                                      TransformerClassifierConfig, Word2VecConfig)
    from kpipe.models.rnn_classifier import build_rnn_classifier
    from kpipe.models.rnn_forecaster import build_rnn_forecaster
    from kpipe.models.seq2seq import build_seq2seq
    from kpipe.models.transformer_classifier import build_transformer_classifier
    from kpipe.models.word2vec import build_cbow, build_skipgram

    small = dict(hidden_dim=8, num_heads=2, intermediate_dim=16, num_layers=1)
    yield "rnn_classifier", build_rnn_classifier(RNNClassifierConfig(embedding_dim=4, units=(4,), vocabulary_size=30,
                                                                     pooling="max_mean"))
    for attention in ("softmax", "linear", "random_features", "fmm"):
        yield f"transformer_classifier[{attention}]", build_transformer_classifier(TransformerClassifierConfig(
            **small, attention=attention, vocabulary_size=30, num_classes=3, sequence_length=12))
    ratios = np.random.default_rng(1).normal(size=(40, 3)).astype("float32")
    yield "bag_of_ngrams[nb, hidden]", build_bag_of_ngrams(BagOfNgramsConfig(
        vocabulary_size=40, hidden_units=4, weighting="nb"), ratios[:, :1])
    yield "bag_of_ngrams[nb, linear]", build_bag_of_ngrams(BagOfNgramsConfig(
        vocabulary_size=40, hidden_units=0, weighting="nb", num_classes=3), ratios)
    for conditioning in ("initial_state", "every_step"):
        yield f"char_rnn[{conditioning}]", build_char_generator(CharGeneratorConfig(
            embedding_dim=4, units=(8,), conditioning=conditioning, vocabulary_size=20, num_categories=3))
    for conditioning in ("none", "every_step"):  # every_step: AddToEveryStep, the class the loader once missed
        yield f"char_transformer[{conditioning}]", build_char_transformer(CharTransformerConfig(
            **small, conditioning=conditioning, vocabulary_size=20, num_categories=3, sequence_length=10))
    yield "rnn_forecaster", build_rnn_forecaster(RNNForecasterConfig(units=(4,)))
    yield "seq2seq", build_seq2seq(Seq2SeqConfig(embedding_dim=4, encoder_units=4, decoder_units=4,
                                                 attention_units=4)).model
    yield "skipgram", build_skipgram(Word2VecConfig(embedding_dim=4, vocabulary_size=30))
    yield "cbow", build_cbow(Word2VecConfig(family="cbow", embedding_dim=4, vocabulary_size=30))


def example_inputs(model, rng):
    """Inputs of the model's input specs: small ids for integer inputs, normal values for the rest."""
    def one(spec):
        shape = [2 if i == 0 else (d or 5) for i, d in enumerate(spec.shape)]
        if "int" in str(spec.dtype):
            return rng.integers(0, 3, shape).astype(str(spec.dtype))
        return rng.normal(size=shape).astype("float32")

    specs = model.inputs
    return {spec.name.split(":")[0]: one(spec) for spec in specs}


@pytest.mark.slow
def test_every_familys_keras_model_loads_in_a_fresh_process_and_gives_the_same_outputs(tmp_path):
    rng = np.random.default_rng(0)
    expected = {}
    for name, model in family_models():
        folder = tmp_path / re.sub(r"\W", "_", name) / "1"  # a pipeline's folder of versions
        folder.mkdir(parents=True)
        inputs = example_inputs(model, rng)
        feed = inputs if len(inputs) > 1 else next(iter(inputs.values()))
        outputs = model.predict(feed, verbose=0)
        model.save(folder / "model.keras")
        np.savez(folder / "inputs.npz", **inputs)
        expected[name] = (folder, np.asarray(outputs if not isinstance(outputs, (list, dict)) else
                                             np.concatenate([np.ravel(o) for o in (outputs.values() if isinstance(
                                                 outputs, dict) else outputs)])))
    code = (
        "import json, sys, numpy as np\nimport kpipe\nresult = {}\n"
        "for folder in sys.argv[1:]:\n"
        "    model = kpipe.load_keras_model(folder.rsplit('/', 1)[0])\n"
        "    inputs = dict(np.load(folder + '/inputs.npz'))\n"
        "    out = model.predict(inputs if len(inputs) > 1 else next(iter(inputs.values())), verbose=0)\n"
        "    if isinstance(out, dict): out = list(out.values())\n"
        "    out = np.concatenate([np.ravel(o) for o in out]) if isinstance(out, list) else np.asarray(out)\n"
        "    result[folder] = out.tolist()\n"
        "print(json.dumps(result))\n")
    run = subprocess.run([sys.executable, "-c", code, *(str(f) for f, _ in expected.values())],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    loaded = json.loads(run.stdout.strip().splitlines()[-1])
    for name, (folder, outputs) in expected.items():
        np.testing.assert_allclose(np.ravel(loaded[str(folder)]), np.ravel(outputs), rtol=1e-5, atol=1e-6,
                                   err_msg=name)
