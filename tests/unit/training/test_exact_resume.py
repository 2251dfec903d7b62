"""A run interrupted after any finished epoch and rerun ends exactly as the uninterrupted run:
same weights, same per-epoch history, with early stopping, dropout and shuffled data in play."""

from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf

from kpipe.training.loop import FineTuneSchedule, make_strategy, train_model
from kpipe.config.training import TrainingConfig
from tests.helpers import kill_after  # stands in for a kill after an epoch's checkpoint


def shuffled_data(seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(1, 30, size=(192, 6)).astype("int32")
    # A learnable rule with a quarter of the labels flipped: validation loss falls, then rises.
    y = (((x > 15).sum(axis=1) >= 3) ^ (rng.random(len(x)) < 0.25)).astype("float32")
    return tf.data.Dataset.from_tensor_slices((x, y)).shuffle(len(x), seed=3).batch(32)


def build(trainable=True):
    inputs = keras.Input((6,), dtype="int32")
    h = keras.layers.Embedding(30, 8, trainable=trainable, name="embedding")(inputs)
    h = keras.layers.Dropout(0.3)(h)
    h = keras.layers.GlobalAveragePooling1D()(h)
    h = keras.layers.Dense(16, activation="relu")(h)
    return keras.Model(inputs, keras.layers.Dense(1, activation="sigmoid")(h))


def without_timing(history):
    return [{k: v for k, v in h.items() if k != "epoch_seconds"} for h in history]


def train(work_dir, crash_after=None, fine_tune=None, epochs=10):
    config = TrainingConfig(epochs=epochs, early_stopping_patience=2, learning_rate=0.03, seed=7)
    keras.utils.set_random_seed(config.seed)  # as a run does before it builds its datasets
    return train_model(lambda: build(trainable=fine_tune is None), loss="binary_crossentropy", metrics=["accuracy"],
                       train_data=shuffled_data(0), validation_data=shuffled_data(1), config=config,
                       work_dir=work_dir, strategy=make_strategy("default"), fine_tune=fine_tune,
                       extra_callbacks=[kill_after(crash_after)] if crash_after is not None else [])


def assert_same_run(a, b):
    (model_a, history_a), (model_b, history_b) = a, b
    losses_a, losses_b = [h["val_loss"] for h in history_a], [h["val_loss"] for h in history_b]
    assert losses_a == pytest.approx(losses_b, rel=1e-6), (losses_a, losses_b)
    for row_a, row_b in zip(without_timing(history_a), without_timing(history_b)):
        assert row_a == pytest.approx(row_b, rel=1e-6)
    for wa, wb in zip(model_a.get_weights(), model_b.get_weights()):
        np.testing.assert_allclose(wa, wb, rtol=1e-6, atol=1e-7)


SCHEDULE = FineTuneSchedule(frozen_epochs=2, learning_rate=0.01,
                            unfreeze=lambda model: setattr(model.get_layer("embedding"), "trainable", True))


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    return train(tmp_path_factory.mktemp("reference"))


@pytest.fixture(scope="module")
def fine_tune_reference(tmp_path_factory):
    return train(tmp_path_factory.mktemp("reference"), fine_tune=SCHEDULE)


def test_reference_run_stops_early(reference):
    assert len(reference[1]) < 10  # otherwise the tests below would not exercise early stopping


@pytest.mark.parametrize("crash_after", [0, 1, 3])
def test_resume_after_any_epoch_ends_as_the_uninterrupted_run(tmp_path, reference, crash_after):
    assert len(reference[1]) > crash_after + 1  # crashes before early stopping fires
    with pytest.raises(KeyboardInterrupt):
        train(tmp_path / "interrupted", crash_after=crash_after)
    assert_same_run(train(tmp_path / "interrupted"), reference)


def test_resume_after_early_stopping_fired_trains_no_more(tmp_path, reference):
    stop_epoch = len(reference[1]) - 1
    with pytest.raises(KeyboardInterrupt):
        train(tmp_path / "interrupted", crash_after=stop_epoch)  # killed after the last epoch was saved
    assert_same_run(train(tmp_path / "interrupted"), reference)


@pytest.mark.slow
@pytest.mark.parametrize("crash_after", [0, 2, 4])
def test_resume_in_either_phase_of_fine_tuning(tmp_path, fine_tune_reference, crash_after):
    assert len(fine_tune_reference[1]) > crash_after
    with pytest.raises(KeyboardInterrupt):
        train(tmp_path / "interrupted", crash_after=crash_after, fine_tune=SCHEDULE)
    assert_same_run(train(tmp_path / "interrupted", fine_tune=SCHEDULE), fine_tune_reference)


# === word2vec: a fresh draw of pairs each epoch, sparse SGD with a decaying rate ===

def train_word2vec(work_dir, crash_after=None):
    from kpipe.families.word2vec.config import Word2VecConfig
    from kpipe.families.word2vec.model import build_skipgram
    from kpipe.families.word2vec.sparse_sgd import SparseSGDTrainer
    from kpipe.preprocessing.configs import SkipGramConfig
    from kpipe.preprocessing.skipgrams import build_corpus, make_skipgram_dataset

    lines = ["the cat sat on the mat", "the dog sat on the log", "a cat and a dog", "the mat and the log"] * 30
    pre = SkipGramConfig(min_count=1, negatives=3, negatives_shared_by=4, subsample=0.05)
    corpus = build_corpus(lines, pre)
    config = TrainingConfig(epochs=4, batch_size=32, optimizer="sgd", learning_rate=0.05,
                            early_stopping_patience=0, seed=7)
    keras.utils.set_random_seed(config.seed)  # as a run does before it builds its datasets
    dataset = make_skipgram_dataset(corpus, pre, batch_size=32, seed=config.seed, batches_per_block=3)
    model_config = Word2VecConfig(vocabulary_size=len(corpus.words), embedding_dim=8, negatives=3)
    return train_model(lambda: SparseSGDTrainer(build_skipgram(model_config), total_steps=40), loss=None,
                       metrics=[], train_data=dataset, validation_data=None, config=config, work_dir=work_dir,
                       strategy=make_strategy("default"),
                       extra_callbacks=[kill_after(crash_after)] if crash_after is not None else [])


@pytest.mark.parametrize("crash_after", [0, 2])
def test_word2vec_resumes_with_the_same_pairs_and_rates(tmp_path, crash_after):
    reference = train_word2vec(tmp_path / "reference")
    with pytest.raises(KeyboardInterrupt):
        train_word2vec(tmp_path / "run", crash_after)
    resumed = train_word2vec(tmp_path / "run")
    for row_a, row_b in zip(without_timing(reference[1]), without_timing(resumed[1])):
        assert row_a == pytest.approx(row_b, rel=1e-6)
    for wa, wb in zip(reference[0].get_weights(), resumed[0].get_weights()):
        np.testing.assert_allclose(wa, wb, rtol=1e-6, atol=1e-7)


def test_steps_per_epoch_bounds_each_epoch_to_that_many_batches(tmp_path):
    seen = []

    class Batches(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            seen[-1].append(batch)

        def on_epoch_begin(self, epoch, logs=None):
            seen.append([])

    x = np.arange(10 * 8 * 6).reshape(80, 6).astype("int32") % 30
    data = tf.data.Dataset.from_tensor_slices((x, np.ones(80, "float32"))).batch(8)  # 10 batches
    config = TrainingConfig(epochs=3, steps_per_epoch=4, early_stopping_patience=5, seed=7)
    _, history = train_model(build, loss="binary_crossentropy", metrics=["accuracy"], train_data=data,
                             validation_data=data, config=config, work_dir=tmp_path, strategy=make_strategy("default"),
                             extra_callbacks=[Batches()])
    assert seen == [[0, 1, 2, 3]] * 3 and len(history) == 3


def test_each_checkpoints_name_is_flushed_before_the_older_checkpoint_is_deleted(tmp_path, monkeypatch):
    """Else a power cut between the delete and the rename reaching the disk could leave no checkpoint at all."""
    from kpipe.training import resume

    events = []
    monkeypatch.setattr(resume, "fsync_folder", lambda folder: events.append(("flush", Path(folder).name)))
    delete = resume.shutil.rmtree
    monkeypatch.setattr(resume.shutil, "rmtree", lambda path, **kw: (
        Path(path).exists() and events.append(("delete", Path(path).name)), delete(path, **kw)))
    train(tmp_path, epochs=2)
    deleted = [i for i, (kind, name) in enumerate(events) if kind == "delete" and name == "epoch-0001"]
    flushed = [i for i, (kind, name) in enumerate(events) if kind == "flush" and name == "checkpoints"]
    assert deleted and flushed and flushed[0] < deleted[0], events
