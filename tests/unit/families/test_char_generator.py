import math

import keras
import numpy as np
import pytest
import tensorflow as tf

from kpipe.layers.char_bigram import CharBigram
from kpipe.families.char_rnn.model import CharSampler, build_char_generator
from kpipe.families.char_sampling import END, START
from kpipe.families.char_rnn.config import CharGeneratorConfig


@pytest.mark.parametrize("conditioning, cell", [("initial_state", "lstm"), ("every_step", "gru"), ("none", "lstm")])
def test_outputs_next_char_logits_for_every_position(conditioning, cell):
    config = CharGeneratorConfig(units=(8, 8), cell=cell, conditioning=conditioning, vocabulary_size=12,
                                 num_categories=3)
    model = build_char_generator(config)
    logits = model([np.array([[1, 5, 6, 0]], "int32"), np.array([2], "int32")])
    assert logits.shape == (1, 4, 12)


def test_greedy_sampling_matches_the_one_call_per_character_loop():
    config = CharGeneratorConfig(units=(16,), conditioning="initial_state", vocabulary_size=10, num_categories=2)
    keras.utils.set_random_seed(3)
    model = build_char_generator(config)
    sampler = CharSampler(model, config, max_length=8)
    prefix = [5, 7]
    ids = sampler.sample_ids(tf.constant(prefix, tf.int32), tf.constant(1), tf.constant(3), tf.constant(1.0),
                             tf.constant(1), tf.constant(0)).numpy()   # top_k=1: greedy, so all 3 agree
    assert ids.shape[0] == 3 and (ids == ids[0]).all()
    # Reference: the tutorial loop, re-running the whole model on the growing sequence each step.
    sequence, expected = [START] + prefix, []
    for _ in range(8 - len(prefix)):
        logits = model([np.array([sequence], "int32"), np.array([1], "int32")]).numpy()[0, -1]
        logits[[0, 1, 3]] = -np.inf  # the sampler never emits padding, START or UNKNOWN
        nxt = int(np.argmax(logits))
        expected.append(nxt)
        if nxt == END:
            break
        sequence.append(nxt)
    assert list(ids[0][:len(expected)]) == expected


def test_sampling_respects_count_and_max_length_and_seed():
    config = CharGeneratorConfig(units=(8,), conditioning="none", vocabulary_size=30)
    sampler = CharSampler(build_char_generator(config), config, max_length=6)
    args = (tf.constant([], tf.int32), tf.constant(0), tf.constant(50), tf.constant(2.0), tf.constant(0))
    a = sampler.sample_ids(*args, tf.constant(7)).numpy()
    b = sampler.sample_ids(*args, tf.constant(7)).numpy()
    assert a.shape == (50, 6) and (a == b).all()  # same seed, same names
    assert not (a == sampler.sample_ids(*args, tf.constant(8)).numpy()).all()
    assert not np.isin(a, [START, 3]).any()


def test_bigram_nll_by_hand():
    # Sequences over ids {0..4}: START=1, END=2, chars 4. Counts: 1->4 (2), 4->2 (2), 4->4 (1).
    bigram = CharBigram(vocabulary_size=5, alpha=0.5).fit([[1, 4, 2], [1, 4, 4, 2]])
    p_start_4 = (2 + 0.5) / (2 + 0.5 * 5)
    p_4_end = (2 + 0.5) / (3 + 0.5 * 5)
    p_4_4 = (1 + 0.5) / (3 + 0.5 * 5)
    expected = -(math.log(p_start_4) + math.log(p_4_4) + math.log(p_4_end)) / 3
    assert bigram.nll_per_char([[1, 4, 4, 2]]) == pytest.approx(expected)
    assert bigram.choose_alpha([[1, 4, 2]]) == 0.001  # the validation names are all seen: least smoothing wins


def test_model_nll_is_the_token_weighted_mean_over_unpadded_targets():
    from kpipe.tasks.generate.run import nll_per_char

    config = CharGeneratorConfig(units=(8,), conditioning="none", vocabulary_size=9)
    model = build_char_generator(config)
    inputs = np.array([[1, 5, 6, 0, 0], [1, 7, 5, 8, 6]], "int32")   # two names of 2 and 4 characters
    targets = np.array([[5, 6, 2, 0, 0], [7, 5, 8, 6, 2]], "int32")
    dataset = tf.data.Dataset.from_tensors(((inputs, np.zeros(2, "int32")), targets))
    logits = model([inputs, np.zeros(2, "int32")]).numpy().astype(np.float64)
    log_probs = logits - np.log(np.exp(logits).sum(axis=-1, keepdims=True))   # NumPy log-softmax
    picked = np.take_along_axis(log_probs, targets[..., None], axis=-1)[..., 0]
    expected = -picked[targets != 0].mean()   # 8 predicted tokens, padding left out
    assert nll_per_char(model, dataset) == pytest.approx(expected, rel=1e-5)
