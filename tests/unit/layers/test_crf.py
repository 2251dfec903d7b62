"""The linear-chain CRF pinned against brute-force enumeration of every tag sequence on tiny chains: the
log-partition, the log-likelihood, Viterbi's best path and the marginals, with right-padded sequences."""

import itertools

import numpy as np
import pytest
import tensorflow as tf

from kpipe.layers.crf import CRF, CRFLoss

TAGS, STEPS = 3, 4


def crf_with_random_weights(seed=0) -> CRF:
    rng = np.random.default_rng(seed)
    crf = CRF(TAGS)
    crf.build((None, STEPS, TAGS))
    crf.transitions.assign(rng.normal(size=(TAGS, TAGS)).astype("float32"))
    crf.start.assign(rng.normal(size=TAGS).astype("float32"))
    crf.end.assign(rng.normal(size=TAGS).astype("float32"))
    return crf


def brute_force(crf: CRF, emissions: np.ndarray, length: int):
    """Every sequence's score, enumerated: (log-partition, best path, marginals (length, tags))."""
    T, start, end = crf.transitions.numpy(), crf.start.numpy(), crf.end.numpy()
    scores = {}
    for path in itertools.product(range(TAGS), repeat=length):
        score = start[path[0]] + end[path[-1]] + sum(emissions[t, path[t]] for t in range(length))
        score += sum(T[path[t], path[t + 1]] for t in range(length - 1))
        scores[path] = score
    values = np.array(list(scores.values()), dtype=np.float64)
    log_z = np.log(np.exp(values - values.max()).sum()) + values.max()
    marginals = np.zeros((length, TAGS))
    for path, score in scores.items():
        for t, tag in enumerate(path):
            marginals[t, tag] += np.exp(score - log_z)
    return log_z, max(scores, key=scores.get), marginals, scores


@pytest.mark.parametrize("lengths", [[4, 4], [4, 2], [1, 3]])
def test_the_chain_equals_brute_force_enumeration(lengths):
    crf = crf_with_random_weights()
    emissions = np.random.default_rng(1).normal(size=(2, STEPS, TAGS)).astype("float32")
    lengths_t = tf.constant(lengths)
    log_z = crf.log_partition(emissions, lengths_t).numpy()
    best = crf.viterbi(emissions, lengths_t).numpy()
    marginals = crf.marginals(emissions, lengths_t).numpy()
    for i, length in enumerate(lengths):
        expected_z, expected_path, expected_marginals, scores = brute_force(crf, emissions[i], length)
        assert log_z[i] == pytest.approx(expected_z, abs=1e-4)
        assert tuple(best[i, :length]) == expected_path and not best[i, length:].any()
        np.testing.assert_allclose(marginals[i, :length], expected_marginals, atol=1e-5)
        gold = np.array([*expected_path[::-1], *[0] * (STEPS - length)])[None]  # any path: the reversed best
        likelihood = crf.log_likelihood(emissions[i:i + 1], gold, lengths_t[i:i + 1]).numpy()[0]
        assert likelihood == pytest.approx(scores[tuple(gold[0, :length])] - expected_z, abs=1e-4)


def test_the_loss_is_the_per_word_negative_log_likelihood_and_its_gradient_reaches_the_transitions():
    crf = crf_with_random_weights(2)
    emissions = tf.constant(np.random.default_rng(3).normal(size=(1, STEPS, TAGS)).astype("float32"))
    targets = tf.constant([[0, 2, 1, -1]])
    with tf.GradientTape() as tape:
        loss = CRFLoss(crf)(targets, emissions)
    expected_z, _, _, scores = brute_force(crf, emissions.numpy()[0], 3)
    assert float(loss) == pytest.approx((expected_z - scores[(0, 2, 1)]) / 3, abs=1e-4)
    gradient = tape.gradient(loss, crf.transitions)
    assert gradient is not None and np.abs(gradient.numpy()).sum() > 0


@pytest.mark.parametrize("steps", [1, 0])
def test_a_batch_one_word_long_or_empty_decodes_in_a_graph_of_unknown_length(steps):
    """`kpipe tag EXPORT "Paris"`: the SavedModel decodes a batch whose longest sentence is one word (a scan over
    the steps after the first then has nothing to stack, and failed in the graph), or none."""
    crf = crf_with_random_weights()
    spec = [tf.TensorSpec([None, None, TAGS], tf.float32), tf.TensorSpec([None], tf.int32)]
    decode = tf.function(lambda e, n: (crf.viterbi(e, n), crf.marginals(e, n), crf.log_partition(e, n)),
                         input_signature=spec)
    emissions = np.random.default_rng(4).normal(size=(2, steps, TAGS)).astype("float32")
    lengths = np.array([steps, 0], np.int32)
    best, marginals, log_z = (t.numpy() for t in decode(emissions, lengths))
    assert best.shape == (2, steps) and marginals.shape == (2, steps, TAGS)
    if steps:
        expected_z, expected_path, expected_marginals, _ = brute_force(crf, emissions[0], 1)
        assert tuple(best[0]) == expected_path and log_z[0] == pytest.approx(expected_z, abs=1e-4)
        np.testing.assert_allclose(marginals[0], expected_marginals, atol=1e-5)
