"""The README's main job on a small slice (the shared run), the export reloaded without kpipe, pretrained vectors
frozen and in two phases (in-process: the real command is the shared run's)."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from kpipe.cli.commands import main
from kpipe.tasks.classify.predict import predict_texts
from tests.helpers import kpipe

pytestmark = pytest.mark.slow


def test_sentiment_bilstm_runs_exports_and_serves_raw_strings(tmp_path, shared_run, monkeypatch):
    run = shared_run("sentiment-bilstm")  # kpipe run sentiment-bilstm --set training.epochs=1 --set data.limit=600
    assert run.returncode == 0, run.stderr[-3000:]
    run.copy_to(tmp_path)  # a second run below publishes beside it
    assert "Exported to saved_models/sentiment-bilstm/1" in run.stdout
    assert "tfidf + logistic regression" in run.stdout  # the baseline beside the model
    export = tmp_path / "saved_models" / "sentiment-bilstm" / "1"
    for name in ("saved_model.pb", "model.keras", "config.toml", "labels.txt", "vocabulary.txt", "metrics.json",
                 "training_curves.png", "history.csv", "tensorboard"):
        assert (export / name).exists(), name
    assert not (tmp_path / "saved_models" / "sentiment-bilstm" / ".work").exists() or not any(
        (tmp_path / "saved_models" / "sentiment-bilstm" / ".work").iterdir())
    metrics = json.loads((export / "metrics.json").read_text())
    manifest = json.loads((export / "kpipe.json").read_text())
    assert (manifest["task"], manifest["family"], manifest["pipeline"]) == ("classify", "rnn_classifier",
                                                                            "sentiment-bilstm")
    assert manifest["signatures"]["serve"] == {"inputs": {"text": {"dtype": "string", "shape": [None]}},
                                               "outputs": ["label", "label_id", "probabilities"]}
    assert len(manifest["data_fingerprint"]) == 16 and manifest["kpipe_version"]
    baseline = metrics["baseline"]
    assert baseline["name"] == "tfidf_logistic_regression" and 0.3 < baseline["accuracy"] <= 1
    from kpipe.evaluation.tfidf_baseline import C_GRID

    assert baseline["C"] in C_GRID and set(baseline["validation_accuracy_by_C"]) == {str(c) for c in C_GRID}
    cached = json.loads(next((tmp_path / "saved_models" / "sentiment-bilstm" / ".cache").glob("vocabulary-*.json"))
                        .read_text(encoding="utf-8"))  # kept for the next run on the same data
    assert cached == (export / "vocabulary.txt").read_text(encoding="utf-8").split("\n")[:-1]

    # Plain TensorFlow, no kpipe: raw strings in, probabilities and label names out.
    loaded = tf.saved_model.load(str(export))
    texts = ["@united thank you so much, great crew!", "worst delay ever, lost my bag", ""]
    out = loaded.signatures["serving_default"](text=tf.constant(texts))
    probabilities = out["probabilities"].numpy()
    assert probabilities.shape == (3, 3)
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, rtol=1e-5)
    labels = [label.decode() for label in out["label"].numpy()]
    assert set(labels) <= {"negative", "neutral", "positive"}
    assert labels == [["negative", "neutral", "positive"][i] for i in probabilities.argmax(axis=1)]

    # The Python API and the CLI agree with the SavedModel.
    predictions = predict_texts(export, texts)
    assert [p.label for p in predictions] == labels
    env = {**{k: v for k, v in os.environ.items() if k != "TF_XLA_FLAGS"}, "KPIPE_CACHE_DIR": str(tmp_path / "cache")}
    cli = kpipe("predict", "sentiment-bilstm", texts[0], cwd=tmp_path, env=env)
    assert cli.returncode == 0, cli.stderr[-2000:]
    label, probability, text = cli.stdout.strip().split("\t")
    assert (label, text) == (labels[0], texts[0])
    assert abs(float(probability) - probabilities[0].max()) < 1e-3
    # what XLA compiled for the BiLSTM is kept for the next command (kpipe.cache.keep_xla_programs)
    assert list((tmp_path / "cache" / "xla").glob("xla_compile_cache*"))

    # A second run gets version 2 and leaves version 1 untouched.
    before = (export / "saved_model.pb").read_bytes()
    monkeypatch.chdir(tmp_path)  # in-process: `kpipe run` has its own subprocess tests
    assert main(["run", "sentiment-bilstm", "--set", "training.epochs=1", "--set", "data.limit=300"]) == 0
    assert (tmp_path / "saved_models" / "sentiment-bilstm" / "2" / "saved_model.pb").exists()
    assert (export / "saved_model.pb").read_bytes() == before


def test_pretrained_frozen_embedding_is_loaded_and_stays_fixed(tmp_path, monkeypatch):
    import keras

    from kpipe.vectors.word_vectors import load_word_vectors
    from tests.made_up_data import NEGATIVE, POSITIVE, synthetic_reviews

    synthetic_reviews(400).to_csv(tmp_path / "reviews.csv", index=False)
    rng = np.random.default_rng(0)
    words = POSITIVE + NEGATIVE + ["the", "movie"]
    (tmp_path / "vectors.txt").write_text(
        "".join(f"{w} {' '.join(f'{x:.4f}' for x in rng.normal(size=4))}\n" for w in words))
    monkeypatch.chdir(tmp_path)
    assert main(["run", "imdb-bilstm", "--data", "reviews.csv", "--set", "training.epochs=1",
                 "--set", 'model.pretrained_embeddings="vectors.txt"', "--set", 'model.embedding_training="frozen"',
                 "--set", "model.embedding_dim=4", "--set", "model.units=[8]"]) == 0
    export = tmp_path / "saved_models" / "imdb-bilstm" / "1"
    metrics = json.loads((export / "metrics.json").read_text())
    vocabulary = (export / "vocabulary.txt").read_text().split("\n")[:-1]
    expected_hits = sum(w in words for w in vocabulary[2:])
    assert metrics["embedding_coverage"]["hits"] == expected_hits > 10
    table = keras.saving.load_model(export / "model.keras").get_layer("embedding").embeddings.numpy()
    vectors = load_word_vectors(str(tmp_path / "vectors.txt"))
    for word in words:
        np.testing.assert_allclose(table[vocabulary.index(word)], vectors.vector(word), atol=1e-6)


def test_imdb_glove_two_phase_schedule_runs_end_to_end(tmp_path, monkeypatch, caplog):
    import keras

    from kpipe.vectors.word_vectors import load_word_vectors
    from tests.made_up_data import NEGATIVE, POSITIVE, synthetic_reviews

    synthetic_reviews(400).to_csv(tmp_path / "reviews.csv", index=False)
    rng = np.random.default_rng(1)
    words = POSITIVE + NEGATIVE
    (tmp_path / "vectors.txt").write_text(
        "".join(f"{w} {' '.join(f'{x:.4f}' for x in rng.normal(size=4))}\n" for w in words))
    monkeypatch.chdir(tmp_path)
    caplog.set_level("INFO")
    assert main(["run", "imdb-glove", "--data", "reviews.csv", "--set", "training.epochs=2",
                 "--set", 'model.embedding_training="two_phase"', "--set", "model.frozen_epochs=1",
                 "--set", "model.fine_tune_learning_rate=0.01", "--set", 'model.pretrained_embeddings="vectors.txt"',
                 "--set", "model.embedding_dim=4", "--set", "model.units=[8]"]) == 0
    assert "Phase 1: 1 epoch(s) with the pretrained layers frozen" in caplog.text
    assert "Phase 2: unfrozen, learning rate 0.01" in caplog.text
    export = tmp_path / "saved_models" / "imdb-glove" / "1"
    metrics = json.loads((export / "metrics.json").read_text())
    assert metrics["epochs_trained"] == 2
    vocabulary = (export / "vocabulary.txt").read_text().split("\n")[:-1]
    table = keras.saving.load_model(export / "model.keras").get_layer("embedding").embeddings.numpy()
    vectors = load_word_vectors(str(tmp_path / "vectors.txt"))
    moved = [not np.allclose(table[vocabulary.index(w)], vectors.vector(w), atol=1e-4) for w in words]
    assert all(moved)  # fine-tuned in phase 2


# What answering with an export must not load: the run and its training loop, the task's stages, data sources
# (kpipe.datasets.files, which reads the input file of `--file`, is input, not training), metrics, baselines,
# the tuner, the task registry. (scikit-learn is not in the list: Keras imports it.)
TRAINING_MODULES = ("kpipe.training", "kpipe.tasks.classify.run", "kpipe.tasks.classify.members",
                    "kpipe.tasks.classify.train_ngrams", "kpipe.tasks.classify.train_pretrained",
                    "kpipe.tasks.classify.train_sequence", "kpipe.tasks.classify.ensemble", "kpipe.tasks.classify.baselines", "kpipe.tasks.registry",
                    "kpipe.evaluation", "kpipe.datasets.text_classification", "kpipe.datasets.embedded",
                    "kpipe.tuning", "optuna")


def test_predicting_with_an_export_imports_no_training_code(shared_run, tmp_path):
    """`kpipe predict` in a fresh process: the export is opened and answered by `tasks.classify.predict`, and
    nothing of the training side (the run, its data readers, metrics, baselines, tuner) is imported."""
    run = shared_run("sentiment-bilstm")
    assert run.returncode == 0, run.stderr[-3000:]
    export = run.folder / "saved_models" / "sentiment-bilstm" / "1"
    code = ("import sys\nfrom kpipe.cli.commands import main\n"
            f"code = main(['predict', {str(export)!r}, 'great crew, thanks'])\n"
            "print('MODULES', ' '.join(sorted(sys.modules)))\nsys.exit(code)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split("\t")[0] in ("negative", "neutral", "positive")
    loaded = done.stdout.split("MODULES ")[1].split()
    assert "kpipe.tasks.classify.predict" in loaded
    training = [name for name in loaded if name.startswith(TRAINING_MODULES)]
    assert not training, training
