"""minilm-embeddings on a tiny Hugging Face checkpoint made here: a pretrained encoder exported as it is
(nothing trains), its embeddings pinned against NumPy on the checkpoint's own backbone, the linear-probe
report beside the baseline, and `kpipe embed` / `kpipe similar` / `kpipe map --texts` on the export."""

import csv
import json

import numpy as np
import pytest
import tensorflow as tf

from kpipe.cli.commands import main
from tests.checkpoints import tiny_backbone
from tests.servers import served_in_thread

pytestmark = pytest.mark.slow
TEXTS = ["great crew thanks", "terrible delay, awful", "the flight was fine", "", "good good good movie"]


@pytest.fixture(scope="module")
def exported(task_run):
    """The task harness's run (tests/e2e/task_harness.py): the checkpoint (64 positions, not MiniLM's 512) is
    written from `tiny_backbone(3)`, which the NumPy reference rebuilds."""
    run = task_run("embed")
    return run.folder, tiny_backbone(3), run


def test_the_export_embeds_raw_strings_as_the_masked_mean_of_the_checkpoints_last_layer(exported):
    """NumPy on the backbone the checkpoint was written from: mean of the last layer over the tokens
    that are not padding ([CLS] and [SEP] included, as sentence-transformers does), scaled to unit length."""
    from kpipe.pretrained import presets

    folder, backbone, result = exported
    inputs = presets.load_preprocessor(str(folder / "checkpoint"), 64)(tf.constant(TEXTS))
    sequence = backbone(inputs)["sequence_output"].numpy().astype(np.float64)
    mask = inputs["padding_mask"].numpy()[..., None].astype(np.float64)
    mean = (sequence * mask).sum(axis=1) / mask.sum(axis=1)
    expected = mean / np.linalg.norm(mean, axis=1, keepdims=True)

    loaded = tf.saved_model.load(str(result.export))
    embeddings = loaded.embed(tf.constant(TEXTS))["embedding"].numpy()
    assert embeddings.shape == (len(TEXTS), 16)
    np.testing.assert_allclose(embeddings, expected, atol=1e-5)
    manifest = json.loads((result.export / "kpipe.json").read_text())
    assert manifest["task"] == "embed" and set(manifest["signatures"]) == {"embed"}


def test_the_report_has_the_linear_probe_beside_the_baseline(exported):
    _, _, result = exported
    metrics = json.loads((result.export / "metrics.json").read_text())
    assert metrics["data"] == {**metrics["data"], "train": 240, "validation": 30, "test": 30}
    assert metrics["pretrained"]["format"] == "hugging face" and metrics["pretrained"]["dimension"] == 16
    by_c = {float(c): a for c, a in metrics["validation_accuracy_by_C"].items()}
    assert metrics["C"] == max(by_c, key=lambda c: (by_c[c], -c))  # chosen on validation, never on test
    assert 0.0 <= metrics["accuracy"] <= 1.0 and "accuracy" in metrics["baseline"]
    assert metrics["epochs_trained"] == 0
    assert "probe" in result.printed and "tfidf + logistic regression" in result.printed


def test_embed_similar_and_map_read_the_export(exported, monkeypatch, capsys, tmp_path):
    folder, _, result = exported
    monkeypatch.chdir(folder)
    assert main(["embed", "minilm-embeddings", "great crew thanks", "--json"]) == 0
    vector = np.array(json.loads(capsys.readouterr().out)["embedding"])
    assert vector.shape == (16,) and np.linalg.norm(vector) == pytest.approx(1.0, abs=1e-5)

    sentences = tmp_path / "sentences.txt"
    sentences.write_text("\n".join(TEXTS[1:] + ["great crew thanks"]) + "\n")
    assert main(["similar", "minilm-embeddings", "--query", "great crew thanks", "--file", str(sentences),
                 "-k", "2"]) == 0
    best = capsys.readouterr().out.splitlines()[0]
    assert best.endswith("great crew thanks") and best.startswith("1.0")  # the query itself, cosine 1

    assert main(["map", "minilm-embeddings", "--texts", *TEXTS[:3], "--out", "m.png", "--csv", "m.csv"]) == 0
    assert [r["label"] for r in csv.DictReader((folder / "m.csv").open())] == TEXTS[:3]


def test_predict_on_a_sentence_encoder_says_which_command_fits(exported, monkeypatch, capsys):
    folder, _, result = exported
    monkeypatch.chdir(folder)
    assert main(["predict", "minilm-embeddings", "hello"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is an embed export" in err[0] and "kpipe embed" in err[0]


def test_served_over_tf_serving_rest_with_the_tokenizer_inside(exported):
    """`kpipe serve` on the export (micro-batched): concurrent requests of raw strings get the embeddings the
    SavedModel gives, through `serving_default` and through `embed` by name."""
    from concurrent.futures import ThreadPoolExecutor

    folder, _, result = exported
    loaded = tf.saved_model.load(str(result.export))
    with served_in_thread("minilm-embeddings", cwd=folder) as server:
        with ThreadPoolExecutor(4) as pool:
            answers = list(pool.map(lambda text: server.post("/v1/models/minilm-embeddings:predict",
                                                             {"instances": [text]}), TEXTS))
        for text, (status, body) in zip(TEXTS, answers):
            assert status == 200, body
            np.testing.assert_allclose(body["predictions"], loaded.embed(tf.constant([text]))["embedding"].numpy(),
                                       atol=1e-5)
        status, body = server.post("/v1/models/minilm-embeddings:predict",
                                   {"signature_name": "embed", "inputs": TEXTS[:2]})
        assert status == 200
        np.testing.assert_allclose(body["outputs"], loaded.embed(tf.constant(TEXTS[:2]))["embedding"].numpy(),
                                   atol=1e-5)
