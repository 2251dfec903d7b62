"""The sparse SGD steps against Keras' own SGD on the same model and loss (the dense step)."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from kpipe.families.word2vec.config import Word2VecConfig
from kpipe.families.word2vec.model import build_cbow, build_skipgram, negative_sampling_loss
from kpipe.families.word2vec.sparse_sgd import MIN_RATE_FRACTION, SparseSGDTrainer, cbow_sgd_step, expand_shared_negatives, skipgram_sgd_step

VOCABULARY, DIM, K, BATCH, RATE = 12, 6, 3, 8, 0.05


def _randomised(model, seed):
    rng = np.random.default_rng(seed)
    for name in ("word_vectors", "output_vectors"):
        table = model.get_layer(name).embeddings
        values = rng.normal(scale=0.5, size=table.shape).astype("float32")
        if model.name == "cbow" and name == "word_vectors":
            values[-1] = 0.0  # the padding row
        table.assign(values)
    return model


def _dense_step(model, inputs):
    """Keras SGD on the batch's mean loss at learning rate α · batch: word2vec's per-pair α."""
    labels = np.zeros((BATCH, 1 + K), "float32")
    labels[:, 0] = 1.0
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=RATE * BATCH), loss=negative_sampling_loss)
    return float(model.train_on_batch(inputs, labels))


def _tables(model):
    return [model.get_layer(name).embeddings.numpy() for name in ("word_vectors", "output_vectors")]


def _batch(seed, shared_by):
    rng = np.random.default_rng(seed)
    # Few words, so rows repeat within the batch (their gradients must add up).
    first = rng.integers(0, VOCABULARY, BATCH).astype("int32")
    second = rng.integers(0, VOCABULARY, BATCH).astype("int32")
    negatives = rng.integers(0, VOCABULARY, (BATCH // shared_by, K)).astype("int32")
    return first, second, negatives


@pytest.mark.parametrize("shared_by", [1, 4])
def test_skipgram_sparse_step_equals_the_dense_sgd_step(shared_by):
    config = Word2VecConfig(vocabulary_size=VOCABULARY, embedding_dim=DIM, negatives=K)
    sparse, dense = _randomised(build_skipgram(config), 0), _randomised(build_skipgram(config), 0)
    before = _tables(sparse)
    targets, contexts, negatives = _batch(1, shared_by)
    loss = skipgram_sgd_step(*(sparse.get_layer(n).embeddings for n in ("word_vectors", "output_vectors")),
                             targets, contexts, negatives, RATE)
    dense_loss = _dense_step(dense, [targets, contexts, np.repeat(negatives, shared_by, axis=0)])
    assert float(loss) == pytest.approx(dense_loss, rel=1e-5)
    for got, expected, old in zip(_tables(sparse), _tables(dense), before):
        np.testing.assert_allclose(got, expected, atol=1e-6)
        changed = np.abs(got - old).max(axis=1) > 0
        assert changed.any() and np.array_equal(changed, np.abs(expected - old).max(axis=1) > 0)


@pytest.mark.parametrize("shared_by", [1, 2])
def test_cbow_sparse_step_equals_the_dense_sgd_step_and_keeps_padding_zero(shared_by):
    config = Word2VecConfig(vocabulary_size=VOCABULARY, embedding_dim=DIM, negatives=K, window=2)
    sparse, dense = _randomised(build_cbow(config), 2), _randomised(build_cbow(config), 2)
    rng = np.random.default_rng(3)
    contexts = rng.integers(0, VOCABULARY, (BATCH, 4)).astype("int32")
    contexts[rng.random(contexts.shape) < 0.4] = VOCABULARY   # empty slots
    contexts[0] = VOCABULARY                                  # a row with no context at all
    _, targets, negatives = _batch(4, shared_by)
    tables = [sparse.get_layer(n).embeddings for n in ("word_vectors", "output_vectors")]
    loss = cbow_sgd_step(*tables, contexts, targets, negatives, RATE, padding_id=VOCABULARY)
    dense_loss = _dense_step(dense, [contexts, targets, np.repeat(negatives, shared_by, axis=0)])
    assert float(loss) == pytest.approx(dense_loss, rel=1e-5)
    for got, expected in zip(_tables(sparse), _tables(dense)):
        np.testing.assert_allclose(got, expected, atol=1e-6)
    assert not _tables(sparse)[0][VOCABULARY].any()


def test_trainer_decays_the_rate_linearly_and_fits_like_the_steps():
    config = Word2VecConfig(vocabulary_size=VOCABULARY, embedding_dim=DIM, negatives=K)
    trainer = SparseSGDTrainer(_randomised(build_skipgram(config), 5), total_steps=4)
    reference = _randomised(build_skipgram(config), 5)
    trainer.compile(optimizer=keras.optimizers.SGD(learning_rate=RATE))
    batches = [_batch(10 + i, 2) for i in range(6)]
    labels = np.zeros((BATCH, 1 + K), "float32")
    blocks = [tuple(np.stack(parts) for parts in zip(*batches[i:i + 4])) for i in (0, 4)]  # 4 + 2 batches
    dataset = tf.data.Dataset.from_generator(lambda: ((b, labels[None]) for b in blocks), output_signature=(
        (tf.TensorSpec([None, None], tf.int32), tf.TensorSpec([None, None], tf.int32),
         tf.TensorSpec([None, None, K], tf.int32)), tf.TensorSpec([None, BATCH, 1 + K], tf.float32)))
    history = trainer.fit(dataset, epochs=1, verbose=0)
    tables = [reference.get_layer(n).embeddings for n in ("word_vectors", "output_vectors")]
    losses = [float(skipgram_sgd_step(*tables, *batch, RATE * max(MIN_RATE_FRACTION, 1 - step / 4)))
              for step, batch in enumerate(batches)]  # α · (1 - i / 4), then the floor once the run is over
    for got, expected in zip(_tables(trainer.word2vec), _tables(reference)):
        np.testing.assert_allclose(got, expected, atol=1e-6)
    assert int(trainer.optimizer.iterations) == 6
    assert history.history["loss"][0] == pytest.approx(np.mean(losses), rel=1e-5)  # every batch's loss counts once
    scores = trainer(batches[0]).numpy()  # calling the trainer calls the model, shared negatives expanded
    np.testing.assert_allclose(scores, trainer.word2vec([*batches[0][:2], np.repeat(batches[0][2], 2, axis=0)]))


def test_shared_negatives_expand_to_one_row_per_pair():
    negatives = tf.constant([[1, 2], [3, 4]])
    assert expand_shared_negatives(negatives, 6).numpy().tolist() == [[1, 2]] * 3 + [[3, 4]] * 3
