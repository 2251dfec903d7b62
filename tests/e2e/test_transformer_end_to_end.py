"""sentiment-transformer on a slice of the embedded tweets: WordPiece inside the export, predict,
sentence embeddings (`embed` signature, `kpipe embed`, `kpipe similar`) and their mistakes."""

import json
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the WordPiece ops for the plain tf.saved_model.load calls below)

from kpipe.cli.commands import main
from kpipe.preprocessing.configs import TextPreprocessingConfig
from kpipe.preprocessing.text import fit_vocabulary
from tests.helpers import kpipe
from tests.servers import served_in_thread

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def exported(shared_run):
    # The quick run of docs/tasks/classify.md, shared with the docs test (tests/conftest.py's SHARED_RUNS).
    run = shared_run("sentiment-transformer")
    assert run.returncode == 0, run.stderr[-3000:]
    return run.folder, run.folder / "saved_models" / "sentiment-transformer" / "1"


def test_a_wordpiece_export_without_tensorflow_text_says_what_to_install(exported, tmp_path):
    from tests.helpers import without_tensorflow_text

    folder, export = exported
    run = subprocess.run([sys.executable, "-m", "kpipe", "predict", str(export), "great crew"], cwd=folder,
                         env=without_tensorflow_text(tmp_path), capture_output=True, text=True, timeout=300)
    err = run.stderr.strip().splitlines()
    assert run.returncode == 2 and len(err) == 1, run.stderr[-3000:]
    assert f"the export {export} needs the WordPiece ops of tensorflow-text" in err[0]


def test_map_of_sentences_through_the_embed_signature(exported, monkeypatch, capsys):
    import csv

    folder, export = exported
    monkeypatch.chdir(folder)  # in-process: `kpipe map` has its subprocess test in tests/unit/vectors/test_maps.py
    texts = ["great crew, thanks", "lost my bag again", "flight delayed three hours", "lovely service"]
    assert main(["map", str(export), "--texts", *texts, "--out", "s.png", "--csv", "s.csv"]) == 0
    rows = list(csv.DictReader((folder / "s.csv").open()))
    assert [r["label"] for r in rows] == texts and (folder / "s.png").stat().st_size > 10_000
    # The classifier's own token embedding maps too (the words of its WordPiece vocabulary).
    capsys.readouterr()
    assert main(["map", str(export), "--top", "20", "--out", "w.png"]) == 0
    assert "20 points" in capsys.readouterr().out


def test_wordpiece_vocabulary_is_fitted_on_training_text_with_reserved_tokens_first():
    texts = np.array(["unbelievably good flight", "unbelievable delays", "good crew"] * 10)
    vocabulary = fit_vocabulary(texts, TextPreprocessingConfig(tokenizer="wordpiece", vocabulary_size=100))
    assert vocabulary[:5] == ["[PAD]", "[CLS]", "[SEP]", "[UNK]", "[MASK]"]
    assert "good" in vocabulary and any(token.startswith("##") for token in vocabulary)


def test_export_takes_raw_strings_and_embeds_with_the_tokenizer_inside(exported):
    _, export = exported
    loaded = tf.saved_model.load(str(export))
    texts = tf.constant(["@united great crew, thanks!", "", "delay " * 300])  # empty and over-long inputs
    probabilities = loaded.serve(texts)["probabilities"].numpy()
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, rtol=1e-5)
    embeddings = loaded.embed(texts)["embedding"].numpy()
    assert embeddings.shape == (3, 64) and np.isfinite(embeddings).all()
    np.testing.assert_array_equal(embeddings[1], 0.0)  # nothing to average: zeros, not NaN
    metrics = json.loads((export / "metrics.json").read_text())
    assert 0.0 <= metrics["accuracy"] <= 1.0
    vocabulary = (export / "vocabulary.txt").read_text().splitlines()
    assert vocabulary[0] == "[PAD]" and len(vocabulary) <= 2000


def test_cli_embed_and_similar(exported, tmp_path, capsys, monkeypatch):
    folder, _ = exported
    monkeypatch.chdir(folder)
    assert main(["embed", "sentiment-transformer", "great crew", "--json"]) == 0
    row = json.loads(capsys.readouterr().out)
    assert row["text"] == "great crew" and len(row["embedding"]) == 64
    sentences = tmp_path / "sentences.txt"
    sentences.write_text("great crew\nlost my bag\nflight delayed\n", encoding="utf-8")
    similar = kpipe("similar", "sentiment-transformer", "--query", "great crew", "--file", str(sentences), "-k", "2",
                    cwd=folder)  # the command's real process
    assert similar.returncode == 0, similar.stderr[-2000:]
    lines = similar.stdout.splitlines()
    assert len(lines) == 2 and lines[0].endswith("\tgreat crew") and float(lines[0].split("\t")[0]) == \
        pytest.approx(1.0, abs=1e-4)  # a sentence is closest to itself


def test_similar_with_a_missing_file_is_one_line_exit_2(exported, capsys, monkeypatch):
    folder, _ = exported
    monkeypatch.chdir(folder)
    assert main(["similar", "sentiment-transformer", "--query", "x", "--file", "missing.txt"]) == 2
    assert "--file not found" in capsys.readouterr().err


def test_embed_on_an_export_without_an_embed_signature_is_one_line_exit_2(tmp_path, capsys):
    module = tf.Module()
    module.serve = tf.function(lambda x: x, input_signature=[tf.TensorSpec([None], tf.string)])
    tf.saved_model.save(module, str(tmp_path / "plain"))
    (tmp_path / "plain" / "kpipe.json").write_text('{"task": "classify", "family": "rnn_classifier", '
                                                   '"signatures": {"serve": {}}}')
    assert main(["embed", str(tmp_path / "plain"), "hello"]) == 2
    assert "has no `embed` signature" in capsys.readouterr().err


def test_neighbors_reads_the_transformers_token_embedding(exported, capsys, monkeypatch):
    folder, export = exported
    monkeypatch.chdir(folder)
    import keras

    from kpipe.vectors.word_vectors import classifier_word_vectors

    vectors = classifier_word_vectors("sentiment-transformer")
    vocabulary = (export / "vocabulary.txt").read_text(encoding="utf-8").splitlines()
    table = keras.saving.load_model(export / "model.keras", compile=False).get_layer(
        "token_and_position_embedding").token_embedding.embeddings.numpy()
    assert list(vectors.words) == vocabulary[5:]  # the reserved [PAD] [CLS] [SEP] [UNK] [MASK] left out
    row = vocabulary.index("the")
    np.testing.assert_allclose(vectors.matrix[vectors.words.index("the")], table[row], rtol=1e-6)
    assert main(["neighbors", "the", "--model", "sentiment-transformer", "-k", "3"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 3


def test_served_over_tf_serving_rest_both_signatures(exported):
    folder, export = exported
    texts = ["great crew, thanks!", "lost my bag"]
    loaded = tf.saved_model.load(str(export))
    with served_in_thread("sentiment-transformer", cwd=folder) as server:
        status, body = server.post("/v1/models/sentiment-transformer:predict",
                                   {"signature_name": "embed", "instances": texts})
        assert status == 200, body
        np.testing.assert_allclose(body["predictions"], loaded.embed(tf.constant(texts))["embedding"].numpy(),
                                   atol=1e-5)
        status, body = server.post("/v1/models/sentiment-transformer:predict", {"instances": texts})
        assert status == 200
        np.testing.assert_allclose([row["probabilities"] for row in body["predictions"]],
                                   loaded.serve(tf.constant(texts))["probabilities"].numpy(), atol=1e-5)


def test_cli_embed_a_table_to_a_file(exported, monkeypatch, capsys):
    import pandas as pd

    folder, export = exported
    monkeypatch.chdir(folder)
    texts = ["great crew, thanks!", "lost my bag"]
    pd.DataFrame({"text": texts}).to_parquet("tweets.parquet")
    assert main(["embed", "sentiment-transformer", "--file", "tweets.parquet", "--output", "vectors.parquet"]) == 0
    result = pd.read_parquet(folder / "vectors.parquet")
    loaded = tf.saved_model.load(str(export))
    np.testing.assert_allclose(np.stack(result["embedding"]), loaded.embed(tf.constant(texts))["embedding"].numpy(),
                               atol=1e-5)
    assert main(["embed", "sentiment-transformer", "--file", "tweets.parquet", "--output", "vectors.csv"]) == 0
    cells = pd.read_csv(folder / "vectors.csv")["embedding"]
    assert [len(cell.split()) for cell in cells] == [64, 64]  # a vector per CSV cell, space-separated
