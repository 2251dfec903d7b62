"""Pairs of texts through the real commands, on a small CSV of evidence/claim pairs whose label needs both texts:
the n-gram family (a block per text and their overlap), the siamese recurrent family and a pretrained
cross-encoder train on them beside the two-block TF-IDF baseline; the export takes `text` and `text_pair`, in
`kpipe predict --pair`, batch prediction with --pair-column and `kpipe serve`; mistakes get one line, exit 2."""

import json
import shutil

import numpy as np
import pandas as pd
import pytest
import tensorflow as tf

from kpipe.cli.commands import main
from tests.checkpoints import write_hugging_face_checkpoint
from tests.helpers import kpipe_in_process
from tests.made_up_data import evidence_pairs
from tests.servers import served_in_thread

pytestmark = pytest.mark.slow
PAIRS = ["--data", "pairs.csv", "--set", 'data.text_column="evidence"', "--set", 'data.text_pair_column="claim"',
         "--set", 'data.group_column="evidence"', "--set", 'data.group_separator=":"']
BIGRAMS = ["run", "sentiment-bigrams", *PAIRS, "--set", 'model.weighting="tfidf"', "--set", "model.ngrams=1",
           "--set", "model.l2=0.001", "--set", "training.epochs=10", "--set", "training.learning_rate=0.2"]
SUPPORTED = ("page1: w1 w2 w3 w4 w5 w6", "w3 w1 w2")
UNSUPPORTED = ("page1: w1 w2 w3 w4 w5 w6", "w30 w31 w3")


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("pairs")
    evidence_pairs().to_csv(folder / "pairs.csv", index=False)
    code, printed = kpipe_in_process(*BIGRAMS, cwd=folder)  # `kpipe run` has its real-process tests elsewhere
    assert code == 0, printed[-3000:]
    return folder


def export(folder, name="sentiment-bigrams", version="1"):
    return folder / "saved_models" / name / version


def test_the_ngram_model_reads_both_texts_and_their_overlap_where_the_baseline_cannot(folder):
    metrics = json.loads((export(folder) / "metrics.json").read_text())
    assert metrics["accuracy"] > 0.9  # the overlap block: with the two bags alone it scores as the baseline
    assert metrics["baseline"]["accuracy"] < 0.65  # two TF-IDF blocks, no interaction: the majority rate
    signature = json.loads((export(folder) / "kpipe.json").read_text())["signatures"]["serve"]
    assert set(signature["inputs"]) == {"text", "text_pair"}
    vocabulary = (export(folder) / "vocabulary.txt").read_text().splitlines()
    assert vocabulary[-3:] == ["overlap:first_in_second", "overlap:second_in_first", "overlap:jaccard"]


def test_predict_takes_pairs_on_the_command_line_and_in_two_columns(folder):
    code, printed = kpipe_in_process("predict", "sentiment-bigrams", "--pair", *SUPPORTED, "--pair", *UNSUPPORTED,
                                     "--json", cwd=folder)
    assert code == 0
    rows = [json.loads(line) for line in printed.splitlines()]
    assert [(r["text"], r["text_pair"], r["label"]) for r in rows] == [(*SUPPORTED, "supported"),
                                                                      (*UNSUPPORTED, "unsupported")]
    table = evidence_pairs(40, seed=5)
    table.to_csv(folder / "new.csv", index=False)
    assert main(["predict", str(export(folder)), "--file", str(folder / "new.csv"), "--column", "evidence",
                 "--pair-column", "claim", "--output", str(folder / "out.csv")]) == 0
    written = pd.read_csv(folder / "out.csv")
    loaded = tf.saved_model.load(str(export(folder)))  # kept: its functions need the object alive
    reference = loaded.serve(tf.constant(table["evidence"]), tf.constant(table["claim"]))
    assert list(written["predicted_label"]) == [b.decode() for b in reference["label"].numpy()]
    assert (written["predicted_label"] == table["label"]).mean() > 0.85


def test_pairs_and_single_texts_mismatched_get_one_line(folder, capsys):
    assert main(["predict", str(export(folder)), "just one text"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "classifies pairs of texts: give --pair FIRST SECOND" in err[0]
    single = folder / "single"  # the same export, its manifest saying it reads one text
    shutil.copytree(export(folder), single)
    manifest = json.loads((single / "kpipe.json").read_text())
    del manifest["signatures"]["serve"]["inputs"]["text_pair"]
    (single / "kpipe.json").write_text(json.dumps(manifest))
    assert main(["predict", str(single), "--pair", *SUPPORTED]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "classifies single texts, not pairs" in err[0]
    assert main(["predict", str(export(folder)), "--file", str(folder / "pairs.csv"), "--column", "evidence",
                 "--pair-column", "claimz", "--output", str(folder / "never.csv")]) == 2
    assert "no column 'claimz'" in capsys.readouterr().err and not (folder / "never.csv").exists()


def test_served_pairs_answer_as_the_savedmodel_and_one_text_is_a_400(folder):
    loaded = tf.saved_model.load(str(export(folder)))
    reference = loaded.serve(tf.constant([SUPPORTED[0]]), tf.constant([SUPPORTED[1]]))
    with served_in_thread("sentiment-bigrams", cwd=folder) as server:
        status, body = server.post("/v1/models/sentiment-bigrams:predict",
                                   {"instances": [{"text": SUPPORTED[0], "text_pair": SUPPORTED[1]}]})
        assert status == 200, body
        np.testing.assert_allclose(body["predictions"][0]["probabilities"], reference["probabilities"].numpy()[0],
                                   atol=1e-6)
        assert body["predictions"][0]["label"] == "supported"
        status, body = server.post("/v1/models/sentiment-bigrams:predict", {"instances": ["just one text"]})
        assert status == 400 and "text_pair" in body["error"]
        status, body = server.post("/v1/models/sentiment-bigrams:predict", {"inputs": {"text": ["one text"]}})
        assert status == 400 and "missing input 'text_pair'" in body["error"]


def test_a_siamese_recurrent_model_exports_what_it_computes(folder, monkeypatch):
    import kpipe
    from kpipe.preprocessing.text import encode_texts, make_vectorizer
    from kpipe.tasks.named_pipelines import load_pipeline

    monkeypatch.chdir(folder)
    tiny = ["--set", "training.epochs=1", "--set", "model.units=[8]", "--set", "model.embedding_dim=8",
            "--set", 'model.pretrained_embeddings=""', "--set", "evaluation.baseline=false"]
    assert main(["run", "sentiment-bilstm", *PAIRS, *tiny]) == 0
    model = kpipe.load_keras_model(export(folder, "sentiment-bilstm"))
    assert [layer.name for layer in model.layers].count("sentence_encoder") == 1  # one encoder, both texts
    vocabulary = (export(folder, "sentiment-bilstm") / "vocabulary.txt").read_text().splitlines()
    pre = load_pipeline("sentiment-bilstm").preprocessing
    pairs = tf.constant([SUPPORTED, UNSUPPORTED, ("page2: w9", "w9 w10 w11 w12 w13 w14 w15")])
    ids = encode_texts(make_vectorizer(pre, vocabulary), pairs, pre)
    assert ids.shape[:2] == (3, 2) and ids.numpy()[2, 0, 3:].sum() == 0  # both texts padded to the longer
    loaded = tf.saved_model.load(str(export(folder, "sentiment-bilstm")))
    served = loaded.serve(pairs[:, 0], pairs[:, 1])
    np.testing.assert_allclose(served["probabilities"].numpy()[:, 1:], model(ids).numpy(), atol=1e-5)
    swapped = model(tf.reverse(ids, axis=[1])).numpy()  # [u, v, |u - v|, u * v]: the order of the texts counts
    assert not np.allclose(swapped, model(ids).numpy())


def test_a_pretrained_cross_encoder_packs_the_pair_with_segment_ids(folder, monkeypatch):
    import kpipe
    from kpipe.pretrained import inputs, presets

    write_hugging_face_checkpoint(folder / "checkpoint")
    monkeypatch.chdir(folder)
    assert main(["run", "sentiment-minilm", *PAIRS, "--set", "model.preset=checkpoint", "--set", "data.limit=150",
                 "--set", "training.epochs=1", "--set", "preprocessing.sequence_length=16",
                 "--set", "evaluation.baseline=false"]) == 0
    preprocessor = inputs.with_truncation(presets.load_preprocessor(str(folder / "checkpoint"), 16), "post")
    long_first = "page3: " + " ".join(f"w{i}" for i in range(30))
    x = inputs.encode(preprocessor, tf.constant([SUPPORTED, (long_first, "w1 w2")]))
    segments, mask = x["segment_ids"].numpy(), x["padding_mask"].numpy()
    assert mask[1].all() and segments[1, -3:].tolist() == [1, 1, 1]  # the longer text cut first: "w1 w2 [SEP]" kept
    assert segments[0, :2].tolist() == [0, 0] and segments[0, mask[0].sum() - 1] == 1
    model = kpipe.load_keras_model(export(folder, "sentiment-minilm"))
    loaded = tf.saved_model.load(str(export(folder, "sentiment-minilm")))
    np.testing.assert_allclose(loaded.serve(tf.constant([SUPPORTED[0], long_first]),
                                            tf.constant([SUPPORTED[1], "w1 w2"]))["probabilities"].numpy()[:, 1:],
                               model(x, training=False).numpy(), atol=1e-5)
    manifest = json.loads((export(folder, "sentiment-minilm") / "kpipe.json").read_text())
    assert set(manifest["signatures"]) == {"serve"}  # a pair model embeds no single sentence


def test_pair_data_mistakes_get_one_line_and_write_nothing(folder, monkeypatch, capsys):
    monkeypatch.chdir(folder)
    broken = evidence_pairs(60)
    broken.loc[[4, 9], "claim"] = ""
    broken.to_csv("broken.csv", index=False)
    before = sorted(p.name for p in (folder / "saved_models").iterdir())
    for name, args, expected in (
            ("sentiment-bigrams", ["--data", "broken.csv", *PAIRS[2:], "--set", 'model.weighting="tfidf"'],
             "2 of 60 rows have no 'claim'"),
            ("sentiment-bigrams", [*PAIRS[:4], "--set", 'data.text_pair_column="claimz"', "--set",
                                   'model.weighting="tfidf"'], "no column 'claimz'"),
            ("sentiment-bigrams", PAIRS, "model.weighting='nb' weighs the n-grams of one text"),
            ("sentiment-transformer", PAIRS, "reads one text; for pairs of texts")):
        assert main(["run", name, *args]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and expected in err[0], err
    assert sorted(p.name for p in (folder / "saved_models").iterdir()) == before
