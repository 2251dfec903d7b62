"""Bahdanau attention against its formula in NumPy; greedy and beam decoding against plain loops."""

import dataclasses
import itertools

import keras
import numpy as np
import pytest
import tensorflow as tf

from kpipe.families.seq2seq_attention.model import END, START, BahdanauAttention, Seq2SeqParts, build_seq2seq, decode_step, encode
from kpipe.families.seq2seq_attention.config import Seq2SeqConfig
from kpipe.families.seq2seq_decoding import beam_decode, greedy_decode


def test_attention_matches_the_additive_formula_in_numpy():
    rng = np.random.default_rng(0)
    query, values = rng.normal(size=(2, 3, 5)).astype("float32"), rng.normal(size=(2, 4, 6)).astype("float32")
    mask = np.array([[True, True, True, False], [True, False, False, False]])
    layer = BahdanauAttention(7)
    context, weights = layer(query, values, mask)
    w1, w2, v = layer.w1.kernel.numpy(), layer.w2.kernel.numpy(), layer.v.kernel.numpy()[:, 0]
    for b, t in itertools.product(range(2), range(3)):
        # score(s_t, h_j) = vᵀ tanh(W₁ h_j + W₂ s_t), softmax over unpadded j
        scores = np.array([v @ np.tanh(values[b, j] @ w1 + query[b, t] @ w2) for j in range(4)])
        scores = np.where(mask[b], scores, -np.inf)
        expected = np.exp(scores - scores.max()) / np.exp(scores - scores.max()).sum()
        np.testing.assert_allclose(weights[b, t], expected, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(context[b, t], expected @ values[b], rtol=1e-5, atol=1e-5)


def test_an_all_padding_source_gives_finite_weights():
    layer = BahdanauAttention(3)
    context, weights = layer(np.ones((1, 2, 4), "float32"), np.zeros((1, 3, 4), "float32"), np.zeros((1, 3), bool))
    assert np.isfinite(weights.numpy()).all() and np.isfinite(context.numpy()).all()


SMALL = Seq2SeqConfig(source_vocabulary_size=12, target_vocabulary_size=7, embedding_dim=4, encoder_units=6,
                      decoder_units=8, attention_units=5, dropout=0.0)


@pytest.fixture(scope="module", params=["gru", "lstm"])
def parts(request):
    keras.utils.set_random_seed(1)
    return build_seq2seq(dataclasses.replace(SMALL, cell=request.param))


SOURCE = np.array([[5, 6, 7, 8], [9, 4, 0, 0], [11, 0, 0, 0]], "int32")


def test_training_model_masks_target_padding(parts):
    out = parts.model({"source": SOURCE, "target_in": np.array([[START, 4, 5], [START, 0, 0], [START, 6, 0]])})
    assert out.shape == (3, 3, 7)
    np.testing.assert_allclose(out.numpy().sum(-1), 1.0, rtol=1e-5)
    assert out._keras_mask.numpy().tolist() == [[True] * 3, [True, False, False], [True, True, False]]


def test_batched_greedy_decoding_equals_one_example_at_a_time(parts):
    ids, attention = tf.function(lambda s: greedy_decode(parts, s, 5))(SOURCE)
    for row in range(len(SOURCE)):
        source = SOURCE[row:row + 1, :max(1, int((SOURCE[row] > 0).sum()))]  # its own length, no padding
        encoder_outputs, mask, states = encode(parts, tf.constant(source))
        token, expected = START, []
        for _ in range(5):
            probabilities, states, weights = decode_step(parts, tf.constant([token]), states, encoder_outputs, mask)
            p = probabilities.numpy()[0].copy()
            p[:3] = 0  # padding, unknown and start are never emitted
            token = int(p.argmax())
            expected.append(token)
            if token == END:
                break
        assert ids.numpy()[row, :len(expected)].tolist() == expected
        assert (ids.numpy()[row, len(expected):] == 0).all()
        np.testing.assert_allclose(attention.numpy()[row, :len(expected)].sum(-1), 1.0, rtol=1e-5)
        # Attention never lands on the padding of the batched source.
        assert attention.numpy()[row, :, source.shape[1]:].max(initial=0.0) < 1e-6


@pytest.mark.slow
def test_greedy_decoding_of_an_ensemble_follows_the_summed_log_probabilities(parts):
    members = [parts, other_model()]

    def decoded(models):
        return tf.function(lambda s: greedy_decode(models, s, 5))(SOURCE)[0].numpy()

    ids = decoded(members)
    single = [decoded(m) for m in members]
    for row in range(len(SOURCE)):
        source = tf.constant(SOURCE[row:row + 1, :max(1, int((SOURCE[row] > 0).sum()))])
        encoded = [encode(m, source) for m in members]
        states = [e[2] for e in encoded]
        token, expected = START, []
        for _ in range(5):
            total = np.zeros(7)
            for i, (m, (outputs, mask, _)) in enumerate(zip(members, encoded)):
                probabilities, states[i], _ = decode_step(m, tf.constant([token]), states[i], outputs, mask)
                total += np.log(probabilities.numpy()[0].astype(np.float64) + 1e-12)
            total[:3] = -np.inf  # padding, unknown and start are never emitted
            token = int(total.argmax())
            expected.append(token)
            if token == END:
                break
        assert ids[row, :len(expected)].tolist() == expected
    assert any((ids != one).any() for one in single)  # the ensemble is neither member alone


def other_model():
    keras.utils.set_random_seed(2)
    return build_seq2seq(dataclasses.replace(SMALL, cell="gru"))


@pytest.mark.slow
@pytest.mark.parametrize("ensemble", [False, True])
def test_beam_of_width_one_is_greedy(parts, ensemble):
    models = [parts, other_model()] if ensemble else parts
    greedy = tf.function(lambda s: greedy_decode(models, s, 5))(SOURCE)[0]
    beam = tf.function(lambda s: beam_decode(models, s, 5, 1))(SOURCE)[0]
    np.testing.assert_array_equal(greedy.numpy(), beam.numpy())


def sequence_log_prob(parts, source, tokens):
    """log P(tokens | source) by teacher forcing through the training model."""
    target_in = np.array([[START] + tokens[:-1]], "int32")
    probabilities = parts.model({"source": source, "target_in": target_in}).numpy()[0]
    return float(sum(np.log(probabilities[i, t]) for i, t in enumerate(tokens)))


@pytest.mark.slow
@pytest.mark.parametrize("ensemble", [False, True])
@pytest.mark.parametrize("length_penalty", [0.0, 1.0])
def test_wide_beam_finds_the_best_finished_output_by_exhaustive_search(parts, length_penalty, ensemble):
    """An ensemble's beam scores a hypothesis by its log-probability summed over the models."""
    members = [parts, other_model()] if ensemble else [parts]
    source = SOURCE[:1]
    emitted = [4, 5, 6, END]  # every token the decoder may emit
    best, best_score = None, -np.inf
    for n in (1, 2, 3):  # all finished outputs of up to 3 tokens: n - 1 tokens then END
        for body in itertools.product(emitted[:-1], repeat=n - 1):
            tokens = list(body) + [END]
            score = sum(sequence_log_prob(m, source, tokens) for m in members) / n ** length_penalty
            if score > best_score:
                best, best_score = tokens, score
    ids, _ = tf.function(lambda s: beam_decode(members, s, 3, 64, length_penalty))(source)
    found = ids.numpy()[0].tolist()
    assert found[:len(best)] == best and all(t == 0 for t in found[len(best):])


def test_parts_found_by_name_in_a_reloaded_model_decode_the_same(parts, tmp_path):
    parts.model.save(tmp_path / "m.keras")
    reloaded = Seq2SeqParts.from_model(keras.saving.load_model(tmp_path / "m.keras"))
    a = tf.function(lambda s: greedy_decode(parts, s, 4))(SOURCE)[0]
    b = tf.function(lambda s: greedy_decode(reloaded, s, 4))(SOURCE)[0]
    np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_config_rejects_bad_values():
    with pytest.raises(ValueError, match="cell"):
        Seq2SeqConfig(cell="rnn")
    with pytest.raises(ValueError, match="beam_width"):
        Seq2SeqConfig(beam_width=0)
    with pytest.raises(ValueError, match="ensemble_members"):
        Seq2SeqConfig(ensemble_members=0)
