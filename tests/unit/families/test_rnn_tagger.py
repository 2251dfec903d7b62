"""The rnn_tagger's character features: a word's vector is the same however wide its batch pads the characters
(the export answers a text the same whatever texts share its batch), for the CNN and the BiLSTM."""

import numpy as np
import pytest

from kpipe.families.rnn_tagger.model import CharWordEncoder


@pytest.mark.parametrize("kind", ["cnn", "lstm"])
def test_a_words_character_features_do_not_depend_on_the_padding_width(kind):
    encoder = CharWordEncoder(kind, char_vocabulary_size=9, embedding_dim=4, units=3, window=3)
    words = np.array([[[2, 3, 4, 5], [6, 7, 0, 0]]], np.int32)  # the longest word fills the batch's width
    wider = np.pad(words, [(0, 0), (0, 0), (0, 5)])  # as in a batch with a 9-character word
    encoder(words)
    table = np.asarray(encoder.embedding.embeddings)
    table[0] = 3.0  # a padding embedding that would show wherever the padding is read
    encoder.embedding.embeddings.assign(table)
    narrow, wide = np.asarray(encoder(words)), np.asarray(encoder(wider))
    np.testing.assert_allclose(narrow, wide, atol=1e-6)
    assert narrow.shape == (1, 2, encoder.output_units) and np.abs(narrow).sum() > 0
