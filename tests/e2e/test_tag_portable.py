"""An rnn_tagger's portable exports (ONNX, LiteRT; float and int8) answer as its SavedModel: the same words, tags
and entities on raw text, the same tags on pre-split words, through `kpipe tag` and `kpipe serve`, without
TensorFlow. The task harness's ner-tweets run (a CRF over a character CNN) is exported from a copy."""

import json
import shutil

import numpy as np
import pytest

from kpipe.cli.commands import main

pytestmark = pytest.mark.slow

TEXTS = ["Barack Obama visited Paris with @john", "I love New York and Justin Bieber !", "",
         "Zoë met Angela Merkel in Berlin on 12/03 , #blessed", "Apple", "@SkyNews : Trump wins the U.S. election"]


@pytest.fixture(scope="module")
def source(task_run, tmp_path_factory):
    folder = tmp_path_factory.mktemp("tagger") / "ner-tweets"
    shutil.copytree(task_run("tag").export, folder / "1")
    return folder / "1"


@pytest.fixture(scope="module")
def saved(source):
    from kpipe.exports.saved_model import load_saved_model

    loaded = load_saved_model(source)
    return lambda name, **inputs: {k: v.numpy() for k, v in loaded.signatures[name](**inputs).items()}


# ONNX in float: tests/e2e/test_every_task.py's raw-text check and the tag_tokens one below
@pytest.mark.parametrize("fmt, quantize", [("litert", "none"), ("onnx", "int8")])
def test_every_format_tags_as_the_savedmodel(source, saved, fmt, quantize):
    from kpipe.exports.portable import export_portable
    from kpipe.portable.tagger import PortableTagger

    tagger = PortableTagger.open(export_portable(source, fmt, quantize))
    expected = saved("serving_default", text=np.array(TEXTS, dtype=object))
    found = tagger.serve(TEXTS)
    assert set(found) == set(expected)
    np.testing.assert_array_equal(found["words"], expected["words"])
    assert (expected["entity_labels"] != b"").any()  # the run marks entities: their checks below are not vacuous
    tolerance = 1e-4 if fmt == "onnx" else 1e-2  # LiteRT's XNNPack kernels round differently
    if quantize == "none":
        for name in ("tags", "entity_labels", "entity_texts", "entity_starts", "entity_ends"):
            np.testing.assert_array_equal(found[name], expected[name], err_msg=name)
        np.testing.assert_allclose(found["entity_scores"], expected["entity_scores"], atol=tolerance)
    else:  # int8 weights: nearly every word's tag
        present = expected["words"] != b""
        assert (found["tags"] == expected["tags"])[present].mean() >= 0.9
    tokens = expected["words"]
    by_tokens, saved_tokens = tagger.tag_tokens(tokens), saved("tag_tokens", tokens=tokens)
    np.testing.assert_array_equal(by_tokens["tags"], found["tags"])
    if quantize == "none":
        np.testing.assert_array_equal(by_tokens["tags"], saved_tokens["tags"])
        np.testing.assert_allclose(by_tokens["scores"], saved_tokens["scores"], atol=tolerance)
    if fmt == "litert":  # a fixed-length loop: a longer sentence is refused in one line (a 400 when served)
        from kpipe.errors import KpipeError

        with pytest.raises(KpipeError, match="sentence of 130 words is longer than this LiteRT export's 128"):
            tagger.serve(["word " * 130])
    empty = tagger.serve([])
    assert empty["words"].shape == (0, 0) and empty["entity_labels"].shape == (0, 0)


def test_kpipe_tag_and_serve_answer_with_the_portable_export_without_tensorflow(source, saved, tmp_path):
    from kpipe.serving.repository import load_version
    from tests.helpers import kpipe_without

    portable = source.parent / "1-onnx"
    if not portable.exists():
        assert main(["export", str(source), "--format", "onnx"]) == 0
    conll = tmp_path / "tweets.conll"
    conll.write_text("Barack B-PER\nObama I-PER\n\nParis B-LOC\n", encoding="utf-8")
    done = kpipe_without(("tensorflow", "keras"), ["tag", str(portable), TEXTS[0], "--format", "jsonl"],
                         ["tag", str(portable), "--file", str(conll), "--conll"], cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    first, *conll_lines = done.stdout.splitlines()
    answer = json.loads(first)
    expected = saved("serving_default", text=np.array(TEXTS[:1], dtype=object))
    assert answer["tags"] == [t.decode() for t in expected["tags"][0]]
    assert [e["text"] for e in answer["entities"]] == [t.decode() for t in expected["entity_texts"][0] if t]
    expected = saved("tag_tokens", tokens=np.array([["Barack", "Obama"], ["Paris", ""]], dtype=object))["tags"]
    assert [line.split()[-1] for line in conll_lines if line] == [t.decode() for t in (*expected[0], expected[1][0])]
    served, signatures = load_version(portable), load_version(source).signatures
    for name in ("serving_default", "tag_tokens"):  # what REST clients see: the SavedModel's names and outputs
        mine, theirs = served.signatures[name], signatures[name]
        assert (mine.inputs, mine.outputs) == (theirs.inputs, theirs.outputs), name
        if name == "tag_tokens":
            tokens = np.array([["Barack", "Obama"], ["Paris", ""]], dtype=object)
            found, expected = mine({"tokens": tokens}), theirs({"tokens": tokens})
            np.testing.assert_array_equal(found["tags"], expected["tags"])
            np.testing.assert_allclose(found["scores"], expected["scores"], atol=1e-4)  # the chain's marginals
