"""Several labels per text through the real commands, on a small CSV of topic sets: every classify family the
data suits trains with one sigmoid per label and thresholds from validation, beside the one-vs-rest baseline; the
export answers raw strings with each label's probability and the labels over their thresholds, in `kpipe predict`,
batch prediction and `kpipe serve`."""

import json

import numpy as np
import pandas as pd
import pytest
import tensorflow as tf

from kpipe.cli.commands import main
from tests.helpers import kpipe_in_process
from tests.servers import served_in_thread

pytestmark = pytest.mark.slow
TOPICS = {"politics": ["vote", "senate", "election", "law"], "sports": ["goal", "match", "team", "score"],
          "tech": ["chip", "code", "robot", "app"]}
FILLER = ["the", "a", "today", "news", "big", "new", "of", "in"]


def topic_sets(n=600, seed=0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(n):
        labels = [t for t in TOPICS if rng.random() < 0.4]
        words = list(rng.choice(FILLER, 4)) + [w for t in labels for w in rng.choice(TOPICS[t], 2)]
        rng.shuffle(words)
        rows.append((" ".join(words), "|".join(labels)))
    return pd.DataFrame(rows, columns=["text", "label"])


SETS = ["--data", "topics.csv", "--set", 'data.label_separator="|"']
BIGRAMS = ["run", "sentiment-bigrams", *SETS, "--set", 'model.weighting="tfidf"', "--set", "training.epochs=4",
           "--set", "training.learning_rate=0.05", "--set", 'training.early_stopping_monitor="val_micro_f1"']


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("multi_label")
    topic_sets().to_csv(folder / "topics.csv", index=False)
    code, printed = kpipe_in_process(*BIGRAMS, cwd=folder)  # `kpipe run` has its real-process tests elsewhere
    assert code == 0, printed[-3000:]
    return folder


def export(folder, name="sentiment-bigrams", version="1"):
    return folder / "saved_models" / name / version


def test_the_report_has_the_multi_label_figures_beside_the_one_vs_rest_baseline(folder):
    metrics = json.loads((export(folder) / "metrics.json").read_text())
    assert metrics["micro_f1"] > 0.9 and set(metrics["per_label"]) == set(TOPICS)  # learnable: words name topics
    assert {"macro_f1", "subset_accuracy", "label_cardinality", "hamming_loss"} <= set(metrics)
    assert metrics["baseline"]["name"] == "one_vs_rest_tfidf_logistic_regression" and metrics["baseline"]["micro_f1"]
    assert set(metrics["thresholds"]) == set(TOPICS) and all(0 < t < 1 for t in metrics["thresholds"].values())
    manifest = json.loads((export(folder) / "kpipe.json").read_text())
    assert manifest["multi_label"]["labels"] == sorted(TOPICS)
    assert manifest["multi_label"]["thresholds"] == [metrics["thresholds"][n] for n in sorted(TOPICS)]


def test_the_export_gives_the_labels_over_their_thresholds(folder, monkeypatch, capsys):
    texts = ["the senate vote on the new chip", "goal", "today of the", "robot team law"]
    out = tf.saved_model.load(str(export(folder))).signatures["serving_default"](text=tf.constant(texts))
    thresholds = np.array(json.loads((export(folder) / "multi_label.json").read_text())["thresholds"], np.float32)
    expected = out["probabilities"].numpy() >= thresholds
    np.testing.assert_array_equal(out["predicted"].numpy(), expected.astype(np.int64))
    names = sorted(TOPICS)
    joined = ["|".join(n for n, on in zip(names, row) if on) for row in expected]
    assert [b.decode() for b in out["labels"].numpy()] == joined
    assert joined[0] == "politics|tech" and joined[1] == "sports" and joined[2] == ""

    monkeypatch.chdir(folder)
    assert main(["predict", "sentiment-bigrams", *texts, "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["labels"] for r in rows] == [j.split("|") if j else [] for j in joined]
    assert [r["label"] for r in rows] == joined
    pd.DataFrame({"text": texts}).to_csv(folder / "in.csv", index=False)
    assert main(["predict", "sentiment-bigrams", "--file", "in.csv", "--output", "out.csv"]) == 0
    written = pd.read_csv(folder / "out.csv", keep_default_na=False)
    assert list(written["label"]) == joined and {f"probability_{n}" for n in names} <= set(written.columns)


def test_a_portable_export_gives_the_same_labels_over_the_same_thresholds(folder, monkeypatch, capsys):
    from kpipe.exports.portable import export_portable

    texts = ["the senate vote on the new chip", "goal", "today of the", "robot team law", ""]
    loaded = tf.saved_model.load(str(export(folder)))
    reference = loaded.signatures["serving_default"](text=tf.constant(texts))
    portable = export_portable(export(folder), "onnx")
    monkeypatch.chdir(folder)
    assert main(["predict", str(portable), *texts, "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["label"] for r in rows] == [b.decode() for b in reference["labels"].numpy()]
    np.testing.assert_allclose([list(r["probabilities"].values()) for r in rows],
                               reference["probabilities"].numpy(), atol=1e-4)


def test_served_rows_answer_as_the_savedmodel(folder):
    texts = ["the senate vote on the new chip", "goal match", ""]
    reference = tf.saved_model.load(str(export(folder))).signatures["serving_default"](text=tf.constant(texts))
    with served_in_thread("sentiment-bigrams", cwd=folder) as server:
        status, body = server.post("/v1/models/sentiment-bigrams:predict", {"instances": texts})
    assert status == 200, body
    assert [row["labels"] for row in body["predictions"]] == [b.decode() for b in reference["labels"].numpy()]
    np.testing.assert_allclose([row["probabilities"] for row in body["predictions"]],
                               reference["probabilities"].numpy(), atol=1e-6)


def test_a_recurrent_model_and_an_ensemble_train_on_label_sets(folder, monkeypatch):
    monkeypatch.chdir(folder)
    tiny = ["--set", "training.epochs=3", "--set", "model.units=[16]", "--set", "model.embedding_dim=16",
            "--set", "preprocessing.vocabulary_size=200", "--set", "training.learning_rate=0.01",
            "--set", "evaluation.baseline=false"]
    assert main(["run", "imdb-bilstm", *SETS, *tiny]) == 0
    metrics = json.loads((export(folder, "imdb-bilstm") / "metrics.json").read_text())
    assert metrics["micro_f1"] > 0.5 and len(metrics["per_label"]) == 3
    assert main(["run", "imdb-ensemble", *SETS, "--set", 'model.ngrams.weighting="tfidf"', "--set",
                 "training.epochs=2", "--set", "model.sequence.units=[8]", "--set", "model.sequence.embedding_dim=8",
                 "--set", "evaluation.baseline=false"]) == 0
    metrics = json.loads((export(folder, "imdb-ensemble") / "metrics.json").read_text())
    weights = metrics["ensemble"]["validation_micro_f1"]  # the members weighed by micro F1, not accuracy
    assert set(weights) == {"ngrams", "sequence", "ensemble"} and weights["ensemble"] >= max(weights["ngrams"],
                                                                                             weights["sequence"])
    assert len(metrics["per_label"]) == 3 and set(metrics["thresholds"]) == set(TOPICS)


def test_naive_bayes_weights_per_label_train_and_compare_with_the_tfidf_run(folder, monkeypatch, capsys):
    """The README's example as written (sentiment-bigrams weighs n-grams by naive Bayes): one ratio per n-gram and
    label, one-vs-rest; `kpipe compare` then shows both runs by their multi-label figures."""
    monkeypatch.chdir(folder)
    assert main(["run", "sentiment-bigrams", *SETS, "--set", "training.epochs=4", "--set",
                 "training.learning_rate=0.05", "--set", "evaluation.baseline=false"]) == 0
    capsys.readouterr()
    nb = json.loads((export(folder, version="2") / "metrics.json").read_text())
    assert nb["weighting"] == "nb" and nb["micro_f1"] > 0.9 and set(nb["per_label"]) == set(TOPICS)
    assert main(["compare", "sentiment-bigrams/1", "sentiment-bigrams/2", "--out", "compare.png"]) == 0
    header, row = capsys.readouterr().out.splitlines()[:2]
    assert header.split()[:5] == ["run", "micro_f1", "macro_f1", "subset_accuracy", "baseline.micro_f1"]
    metrics = json.loads((export(folder) / "metrics.json").read_text())
    assert row.split()[1] == f"{metrics['micro_f1']:.4g}"


def test_naive_bayes_weights_with_a_hidden_layer_are_refused_for_label_sets_in_one_line(folder, monkeypatch, capsys):
    monkeypatch.chdir(folder)
    before = sorted(p.name for p in export(folder).parent.iterdir())
    assert main(["run", "sentiment-bigrams", *SETS, "--set", "model.hidden_units=8"]) == 2  # weighting="nb"
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "model.weighting='nb'" in err[0] and "use model.hidden_units=0" in err[0]
    assert sorted(p.name for p in export(folder).parent.iterdir()) == before  # nothing written
