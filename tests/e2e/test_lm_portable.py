"""A language model's portable exports (its decoder's one-step network as ONNX or LiteRT: rnn_lm's cell states,
gpt's key/value caches, linear attention's running sums; tokenizing, sampling and scoring in NumPy) answer as its
SavedModel: the same log-likelihood for any text (windows of the context included), the same greedy continuations,
through `kpipe generate`, `kpipe perplexity` and `kpipe serve`, without TensorFlow. Linear attention's step network
is pinned in tests/unit/families/test_lm_step_network.py (the runtime around it is the same)."""

import json
import random

import numpy as np
import pytest

from kpipe.cli.commands import main
from tests.helpers import kpipe_in_process

pytestmark = pytest.mark.slow

WORDS = "the cat sat on a mat and dog ran to big red house with small blue door".split()
PROMPTS = ["the cat sat", "a big red dog ran", ""]


@pytest.fixture(scope="module", params=["rnn_lm", "gpt"])
def source(request, tmp_path_factory, task_run):
    """A small run of each decoder, its context 32 tokens: rnn_lm (two LSTM layers) on random sentences, gpt with
    softmax attention (the task harness's lm run: read only)."""
    if request.param == "gpt":
        return task_run("lm").export
    folder = tmp_path_factory.mktemp(request.param)
    rng = random.Random(0)
    for name, count in (("train.txt", 600), ("valid.txt", 40)):
        (folder / name).write_text("".join(" ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 30))) + "\n"
                                           for _ in range(count)), encoding="utf-8")
    code, printed = kpipe_in_process(
        "run", "lm-wikitext-lstm", "--data", "train.txt", "--set", 'data.test_path="valid.txt"', "--set",
        "data.documents=lines", "--set", "training.epochs=1", "--set", "preprocessing.vocabulary_size=300", "--set",
        "preprocessing.sequence_length=32", "--set", "model.embedding_dim=16", "--set", "model.units=[16, 12]",
        cwd=folder)
    assert code == 0, printed[-3000:]
    return folder / "saved_models" / "lm-wikitext-lstm" / "1"


@pytest.fixture(scope="module")
def saved(source):
    from kpipe.exports.saved_model import load_saved_model

    loaded = load_saved_model(source)
    return lambda name, **inputs: {k: v.numpy() for k, v in loaded.signatures[name](**inputs).items()}


def greedy(saved, prompts, new_tokens=10):
    import tensorflow as tf

    return saved("generate", prompt=tf.constant(prompts), max_new_tokens=tf.constant(new_tokens),
                 temperature=tf.constant(0.0), top_k=tf.constant(0), top_p=tf.constant(1.0),
                 seed=tf.constant(-1))["text"]


@pytest.mark.parametrize("fmt, quantize", [("onnx", "none"), ("litert", "int8")])
def test_every_format_scores_and_writes_as_the_savedmodel(source, saved, fmt, quantize, task_portable):
    if fmt == "litert" and source.parent.name != "lm-wikitext-lstm":
        pytest.skip("LiteRT int8: checked on the recurrent model; the transformers' ONNX pins their step networks")
    import tensorflow as tf

    from kpipe.errors import KpipeError
    from kpipe.exports.portable import export_portable
    from kpipe.portable.language_model import PortableLanguageModel

    model = PortableLanguageModel.open(task_portable("lm", fmt, quantize) if source.parent.name == "lm-bible"
                                       else export_portable(source, fmt, quantize))  # the harness's run: its export
    texts = ["the cat sat on the mat", " ".join(["red dog"] * 40), "", "Zoë's café, naïve 🙂"]  # 2nd: 3 windows
    expected, found = saved("score", text=tf.constant(texts)), model.score(texts)
    for key in ("words", "characters", "tokens"):
        np.testing.assert_array_equal(found[key], expected[key], err_msg=key)
    assert expected["tokens"][1] > 64  # read in windows of the 32-token context
    np.testing.assert_allclose(found["log_likelihood"], expected["log_likelihood"],
                               rtol=1e-4 if quantize == "none" else 0.05)
    if quantize == "none":
        np.testing.assert_array_equal(model.generate(PROMPTS, 10)["text"], greedy(saved, PROMPTS))
        default = saved("serving_default", prompt=tf.constant(PROMPTS[:1]))["text"]
        np.testing.assert_array_equal(model.generate(PROMPTS[:1])["text"], default)  # 64 new tokens at most
    sampled = [model.generate(PROMPTS, 12, temperature=1.0, top_k=5, top_p=0.9, seed=3)["text"] for _ in range(2)]
    np.testing.assert_array_equal(sampled[0], sampled[1])  # a seed repeats
    for settings, message in (({"temperature": -1.0}, "temperature must be >= 0"), ({"top_p": 0.0}, "top_p"),
                              ({"top_k": 100_000}, "top_k"), ({"max_new_tokens": 0}, "max_new_tokens must be > 0"),
                              ({"max_new_tokens": 40}, "exceed the model's context of 32 tokens")):
        with pytest.raises(KpipeError, match=message):
            model.generate(PROMPTS, **settings)
    with pytest.raises(KpipeError, match="longer than the model's context of 32 tokens"):
        model.generate([" ".join(WORDS * 3)])
    assert model.generate([])["text"].shape == (0,)


def test_kpipe_generate_perplexity_and_serve_answer_without_tensorflow(source, saved, tmp_path, capsys):
    if source.parent.name != "lm-wikitext-lstm":
        pytest.skip("the commands are the same for every family: checked once")
    from kpipe.serving.repository import load_version
    from tests.helpers import kpipe_without

    portable = source.parent / "1-onnx"
    if not portable.exists():
        assert main(["export", str(source), "--format", "onnx"]) == 0
    capsys.readouterr()
    assert main(["tag", str(portable), "some text"]) == 2  # another task's portable export: one line
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is a portable lm export, not a tag one; kpipe tag answers with tag exports" in err[0]
    assert main(["generate", str(portable), "--prompt", "the cat", "--beam-search"]) == 2  # the SavedModel's alone
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is a portable export, which samples and writes greedily but has no beam" in err[0]
    documents = tmp_path / "documents.txt"
    documents.write_text("the cat sat on the mat\na big red house with a small blue door\n", encoding="utf-8")
    done = kpipe_without(("tensorflow", "keras"),
                         ["generate", str(portable), "--prompt", "the cat sat", "--max-new-tokens", "10", "--json"],
                         ["perplexity", str(portable), "--file", str(documents), "--json"], cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    written, figures = (json.loads(line) for line in done.stdout.splitlines())
    assert written["text"] == greedy(saved, ["the cat sat"])[0].decode()
    expected = saved("score", text=np.array(documents.read_text().splitlines(), dtype=object))
    assert figures["log_likelihood"] == pytest.approx(float(expected["log_likelihood"].sum()), rel=1e-4)
    served, signatures = load_version(portable), load_version(source).signatures
    for name in ("serving_default", "generate"):  # what REST clients see: the SavedModel's names and outputs
        mine, theirs = served.signatures[name], signatures[name]
        assert (mine.inputs, mine.outputs) == (theirs.inputs, theirs.outputs), name
    prompt = np.array(["a big red"], dtype=object)
    assert served.signatures["serving_default"]({"prompt": prompt})["text"][0] == \
        signatures["serving_default"]({"prompt": prompt})["text"][0]
