"""The transformer translator's step-by-step decoding against its own teacher-forced model run on each prefix;
padding masked in training and in decoding."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from kpipe.families.seq2seq_decoding import beam_decode, greedy_decode
from kpipe.families.seq2seq_attention.model import END, START
from kpipe.families.seq2seq_transformer.config import Seq2SeqTransformerConfig
from kpipe.families.seq2seq_transformer.model import TransformerParts, build_seq2seq_transformer

SOURCE = np.array([[5, 6, 7, 8], [9, 4, 0, 0], [11, 0, 0, 0]], "int32")


@pytest.fixture(scope="module")
def parts():
    keras.utils.set_random_seed(3)
    return build_seq2seq_transformer(Seq2SeqTransformerConfig(
        source_vocabulary_size=12, target_vocabulary_size=9, hidden_dim=16, num_heads=2, intermediate_dim=32,
        encoder_layers=2, decoder_layers=2, dropout=0.0, source_positions=6, target_positions=8))


def test_the_training_model_masks_target_padding(parts):
    out = parts.model({"source": SOURCE, "target_in": np.array([[START, 4, 5], [START, 0, 0], [START, 6, 0]])})
    assert out.shape == (3, 3, 9)
    assert out._keras_mask.numpy().tolist() == [[True] * 3, [True, False, False], [True, True, False]]


def test_source_padding_changes_nothing(parts):
    target_in = np.array([[START, 4, 5]])
    alone = parts.model({"source": SOURCE[2:3, :1], "target_in": target_in}).numpy()
    padded = parts.model({"source": SOURCE[2:3], "target_in": target_in}).numpy()
    np.testing.assert_allclose(padded, alone, rtol=1e-5, atol=1e-6)


def test_greedy_decoding_equals_the_teacher_forced_model_run_on_each_prefix(parts):
    ids, _ = tf.function(lambda s: greedy_decode(parts, s, 6))(SOURCE)
    for row in range(len(SOURCE)):
        source = SOURCE[row:row + 1, :max(1, int((SOURCE[row] > 0).sum()))]  # its own length, no padding
        prefix, expected = [START], []
        for _ in range(6):
            p = parts.model({"source": source, "target_in": np.array([prefix])}).numpy()[0, -1].copy()
            p[:3] = 0  # padding, unknown and start are never emitted
            token = int(p.argmax())
            expected.append(token)
            if token == END:
                break
            prefix.append(token)
        assert ids.numpy()[row, :len(expected)].tolist() == expected
        assert (ids.numpy()[row, len(expected):] == 0).all()


def test_each_cached_step_gives_the_teacher_forced_probabilities_at_its_position(parts):
    """The decoder's key/value caches: one position per step, the same numbers as the whole prefix at once."""
    target_in = np.array([[START, 4, 5, 6, 7], [START, 8, 4, 3, 6], [START, 5, 5, 5, 5]], "int32")
    expected = parts.model({"source": SOURCE, "target_in": target_in}).numpy()
    encoder_outputs, mask, states = parts.encode(tf.constant(SOURCE))
    for position in range(target_in.shape[1]):
        probabilities, states, _ = parts.step(tf.constant(target_in[:, position]), states, encoder_outputs, mask)
        np.testing.assert_allclose(probabilities.numpy(), expected[:, position], rtol=1e-4, atol=1e-6)


@pytest.mark.slow  # traces beam searches of three widths
def test_a_beam_of_one_is_greedy_and_wider_beams_finish(parts):
    greedy, _ = tf.function(lambda s: greedy_decode(parts, s, 6))(SOURCE)
    beam1, _ = tf.function(lambda s: beam_decode(parts, s, 6, 1))(SOURCE)
    np.testing.assert_array_equal(beam1.numpy(), greedy.numpy())
    beam3, attention = tf.function(lambda s: beam_decode(parts, s, 6, 3))(SOURCE)
    assert beam3.shape == (3, 6) and attention.shape == (3, 6, 4)


@pytest.mark.slow  # saves and reloads a model
def test_parts_are_found_again_in_a_saved_model(parts, tmp_path):
    parts.model.save(tmp_path / "model.keras")
    again = TransformerParts.from_model(keras.saving.load_model(tmp_path / "model.keras"))
    assert [layer.name for layer in again.decoders] == ["decoder_1", "decoder_2"]
    ids, _ = tf.function(lambda s: greedy_decode(again, s, 6))(SOURCE)
    expected, _ = tf.function(lambda s: greedy_decode(parts, s, 6))(SOURCE)
    np.testing.assert_array_equal(ids.numpy(), expected.numpy())
