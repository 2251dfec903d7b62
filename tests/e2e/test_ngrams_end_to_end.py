"""Bag-of-n-grams and ensemble classifiers end to end on small slices: export on raw strings, the
baseline beside the model, the ensemble's weighted average."""

import json
import types
import zipfile

import keras
import numpy as np
import pytest
import tensorflow as tf

from kpipe.cli.commands import main
from kpipe.tasks.classify.members import Member
from kpipe.tasks.classify.signatures import ClassifierServing
from kpipe.tasks.classify.ensemble import ensemble_weights
from tests.made_up_data import synthetic_reviews


@pytest.mark.slow
def test_sentiment_bigrams_exports_a_model_on_raw_strings_with_the_baseline_beside_it(shared_run, capsys):
    run = shared_run("sentiment-bigrams")  # tf-idf weighting, a hidden layer of 8, 3,000 word n-grams
    assert run.returncode == 0, run.stderr[-3000:]
    assert "tfidf + logistic regression" in run.stdout
    export = run.folder / "saved_models" / "sentiment-bigrams" / "1"
    metrics = json.loads((export / "metrics.json").read_text())
    assert metrics["weighting"] == "tfidf" and "accuracy" in metrics["baseline"]
    # The pipeline adds character 1-5 grams to the word n-grams: one line per feature in the vocabulary file,
    # line breaks inside character n-grams escaped (the tweets have "\r\r").
    assert metrics["char_ngrams"] == 5
    names = (export / "vocabulary.txt").read_text(encoding="utf-8").split("\n")[:-1]
    assert len(names) == metrics["features"] and 3000 < metrics["features"] <= 3000 + 200000
    assert "char:\\r" in names and "char::)" in names
    assert json.loads((export / "kpipe.json").read_text())["family"] == "bag_of_ngrams"

    loaded = tf.saved_model.load(str(export))  # plain TensorFlow: strings in
    out = loaded.serve(tf.constant(["@united thanks, great crew!", "lost my bag again", ""]))
    probabilities = out["probabilities"].numpy()
    assert probabilities.shape == (3, 3)
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, rtol=1e-5)
    assert main(["predict", str(export), "great crew"]) == 0  # in-process: `kpipe predict` has its subprocess test
    assert capsys.readouterr().out.split("\t")[0] in {"negative", "neutral", "positive"}


@pytest.mark.slow
def test_imdb_ensemble_trains_both_members_and_exports_one_model(tmp_path, monkeypatch):
    synthetic_reviews(800).to_csv(tmp_path / "reviews.csv", index=False)
    monkeypatch.chdir(tmp_path)  # in-process: the test above runs the real command
    assert main(["run", "imdb-ensemble", "--data", "reviews.csv", "--set", "training.epochs=1",
                 "--set", "model.sequence.units=[8]", "--set", "model.sequence.embedding_dim=8",
                 "--set", "model.ngrams.max_features=2000", "--set", "model.ngrams_training.epochs=2",
                 "--set", "model.ngrams_training.learning_rate=0.01", "--set", "model.sequence_members=2",
                 # a recurrent third member with its own words (10 of them), training table and rate
                 "--set", "model.recurrent.units=[4]", "--set", "model.recurrent.embedding_dim=8",
                 "--set", "model.recurrent_preprocessing.vocabulary_size=10",
                 "--set", "model.recurrent_training.epochs=1",
                 "--set", "model.recurrent_training.learning_rate=0.005"]) == 0
    export = tmp_path / "saved_models" / "imdb-ensemble" / "1"
    metrics = json.loads((export / "metrics.json").read_text())
    ensemble = metrics["ensemble"]
    assert 0.0 <= ensemble["ngram_weight"] <= 1.0 and ensemble["chosen_on_validation"]
    assert 0.0 <= ensemble["recurrent_weight"] <= 1.0 - ensemble["ngram_weight"] + 1e-9
    assert set(ensemble["validation_accuracy"]) == {"ngrams", "sequence", "recurrent", "ensemble",
                                                    "sequence_members"}
    assert len(ensemble["validation_accuracy"]["sequence_members"]) == 2
    assert ensemble["validation_accuracy"]["ensemble"] >= max(ensemble["validation_accuracy"][k]
                                                              for k in ("ngrams", "sequence", "recurrent"))
    # the n-gram member's own two epochs, the recurrent member's one, then one for each sequence member
    assert metrics["epochs_trained"] == 5
    first, second = (h for h in metrics["history"][3:])
    assert first["loss"] != second["loss"]  # seeds 1337 and 1338: two different models
    # Each member was compiled its own way: the n-grams' and the recurrent member's learning rates,
    # [training]'s for the BiLSTM.
    rates = [json.loads(zipfile.ZipFile(export / name).read("config.json"))["compile_config"]["optimizer"]
             ["config"]["learning_rate"] for name in ("ngrams_model.keras", "recurrent_model.keras", "model.keras")]
    np.testing.assert_allclose(rates, [0.01, 0.005, 0.001])
    assert (export / "ngrams_model.keras").is_file() and (export / "ngrams_vocabulary.txt").is_file()
    recurrent_words = (export / "recurrent_vocabulary.txt").read_text().splitlines()
    assert len(recurrent_words) == 10 < len((export / "vocabulary.txt").read_text().splitlines())
    loaded = tf.saved_model.load(str(export))  # kept referenced: its functions hold its variables weakly
    out = loaded.serve(tf.constant(["a wonderful film", "dull and awful"]))
    np.testing.assert_allclose(out["probabilities"].numpy().sum(axis=1), 1.0, rtol=1e-5)


def constant_member(probability):
    """A binary member whose model ignores its input and answers `probability` for every text."""
    inputs = keras.Input(shape=(1,))
    outputs = keras.layers.Dense(1, activation="sigmoid", kernel_initializer="zeros",
                                 bias_initializer=keras.initializers.Constant(np.log(probability / (1 - probability))))(inputs)
    model = keras.Model(inputs, outputs)
    return Member(model, lambda text: tf.ones([tf.shape(text)[0], 1]), None, [], [], [], {})


def test_ensemble_serving_is_the_weighted_average_of_its_members():
    serving = ClassifierServing([constant_member(0.9), constant_member(0.2)], [0.25, 0.75], ["neg", "pos"])
    out = serving.serve(tf.constant(["a", "b"]))
    expected_positive = 0.25 * 0.9 + 0.75 * 0.2
    np.testing.assert_allclose(out["probabilities"].numpy(), [[1 - expected_positive, expected_positive]] * 2,
                               rtol=1e-5)
    assert [label.decode() for label in out["label"].numpy()] == ["neg", "neg"]


class FixedMember:
    """A member whose validation probabilities are given (ensemble_weights only asks for those)."""

    def __init__(self, probabilities, role=""):
        self.fixed = np.asarray(probabilities, dtype="float64")
        self.role = role

    def probabilities(self, texts, labels):
        return self.fixed


def test_ensemble_weights_give_the_sequence_members_equal_shares_of_the_rest():
    """The n-gram share is the grid point whose mix (share x n-grams + the rest x the sequence members' mean)
    is most accurate on validation, ties to the lower log-loss: checked against a NumPy search of the grid."""
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 3, size=60)
    members = [FixedMember(rng.dirichlet(np.ones(3), size=60)) for _ in range(3)]
    splits = types.SimpleNamespace(validation=types.SimpleNamespace(texts=np.array(["x"] * 60), labels=labels),
                                   multi_label=False)
    weights, report = ensemble_weights(members, splits, ngram_weight=-1.0)

    ngrams, first, second = (m.fixed for m in members)
    best = None
    for share in np.round(np.linspace(0.0, 1.0, 21), 2):
        mixed = share * ngrams + (1 - share) * (first + second) / 2
        key = ((mixed.argmax(axis=1) == labels).mean(), np.log(mixed[np.arange(60), labels]).mean())
        best = (key, share) if best is None or key > best[0] else best
    share = best[1]
    np.testing.assert_allclose(weights, [share, (1 - share) / 2, (1 - share) / 2])
    assert report["validation_accuracy"]["sequence_members"] == [
        (first.argmax(axis=1) == labels).mean(), (second.argmax(axis=1) == labels).mean()]
    mixed = share * ngrams + (1 - share) * (first + second) / 2
    assert report["validation_accuracy"]["ensemble"] == pytest.approx((mixed.argmax(axis=1) == labels).mean())


def test_ensemble_weights_choose_the_recurrent_members_share_jointly_with_the_ngrams():
    """With a recurrent third member, the (n-gram, recurrent) shares are the pair on the grid (summing to at
    most 1) whose mix is most accurate on validation, ties to the lower log-loss: checked against a NumPy
    search; the weights come in the members' order (the recurrent one found by its role) and a fixed share
    is kept."""
    rng = np.random.default_rng(1)
    labels = rng.integers(0, 3, size=80)
    ngrams, recurrent, sequence = (FixedMember(rng.dirichlet(np.ones(3) * 0.7, size=80), role)
                                   for role in ("ngrams", "recurrent", ""))
    splits = types.SimpleNamespace(validation=types.SimpleNamespace(texts=np.array(["x"] * 80), labels=labels),
                                   multi_label=False)
    weights, report = ensemble_weights([ngrams, recurrent, sequence], splits, ngram_weight=-1.0)

    def key(a, c):
        mixed = a * ngrams.fixed + c * recurrent.fixed + (1 - a - c) * sequence.fixed
        return (mixed.argmax(axis=1) == labels).mean(), np.log(mixed[np.arange(80), labels]).mean()

    grid = np.round(np.linspace(0.0, 1.0, 21), 2)
    best = max(((key(a, c), -a, -c) for a in grid for c in grid if a + c <= 1 + 1e-9))
    a, c = -best[1], -best[2]
    assert 0 < c < 1  # the recurrent member is in the mix: the check below is about a real choice
    np.testing.assert_allclose(weights, [a, c, 1 - a - c])
    assert report["ngram_weight"] == a and report["recurrent_weight"] == c and report["chosen_on_validation"]
    accuracy = report["validation_accuracy"]
    assert accuracy["recurrent"] == (recurrent.fixed.argmax(axis=1) == labels).mean()
    assert accuracy["ensemble"] == pytest.approx(best[0][0])
    assert accuracy["ensemble"] > max(accuracy["ngrams"], accuracy["sequence"], accuracy["recurrent"])

    weights, report = ensemble_weights([ngrams, recurrent, sequence], splits, ngram_weight=0.3, recurrent_weight=0.5)
    np.testing.assert_allclose(weights, [0.3, 0.5, 0.2])
    assert not report["chosen_on_validation"]


@pytest.mark.slow  # trains three members
def test_each_member_reads_batches_of_its_own_training_tables_size(tmp_path, monkeypatch):
    """A member trained with a table of its own (model.ngrams_training, model.recurrent_training, or [training]
    for the sequence member) is fed batches of that table's size, for every family (training itself is
    replaced by building the model: the batches are what is checked)."""
    from kpipe.tasks.named_pipelines import load_pipeline
    from kpipe.config.training import TrainingConfig
    from kpipe.datasets.text_classification import load_text_classification
    from kpipe.families.bag_of_ngrams.config import BagOfNgramsConfig
    from kpipe.families.pretrained_classifier.config import PretrainedClassifierConfig
    from kpipe.families.rnn_classifier.config import RNNClassifierConfig
    from kpipe.tasks.classify.members import train_member
    from kpipe.training.run import Run
    from tests.checkpoints import write_keras_hub_preset

    synthetic_reviews(200).to_csv(tmp_path / "reviews.csv", index=False)
    write_keras_hub_preset(tmp_path / "preset")
    monkeypatch.chdir(tmp_path)
    config = load_pipeline("imdb-ensemble", ["data.source=file", 'data.path="reviews.csv"', "training.batch_size=16",
                                             "preprocessing.sequence_length=24"])
    splits = load_text_classification(config.data)
    families = [BagOfNgramsConfig(max_features=500), RNNClassifierConfig(units=(4,), embedding_dim=8),
                PretrainedClassifierConfig(preset=str(tmp_path / "preset"))]
    with Run(config) as run:
        monkeypatch.setattr(run, "train", lambda build, **kwargs: (build(), []))
        for family, size in zip(families, (5, 7, 9)):
            member = train_member(run, family, splits, config.preprocessing, subdir=family.family,
                                  training=TrainingConfig(batch_size=size))
            sizes = [len(labels) for _, labels in member.dataset(splits.train.texts, splits.train.labels)]
            assert max(sizes) == size and sum(sizes) == len(splits.train), (family.family, sizes)
        member = train_member(run, families[1], splits, config.preprocessing, subdir="sequence")  # [training]'s
        assert max(len(labels) for _, labels in member.dataset(splits.train.texts, splits.train.labels)) == 16
