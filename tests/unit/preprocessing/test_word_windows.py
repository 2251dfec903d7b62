"""A pretrained tagger's windows: each word read at its own first word piece, short sentences in one window, long
ones in overlapping windows with each word where it has the most context, nothing cut."""

import keras_hub
import numpy as np
import pytest
import tensorflow as tf

from kpipe.preprocessing.tagging import pad_words
from kpipe.preprocessing.word_windows import WordPieceWindows
from tests.checkpoints import VOCABULARY, WORDS


@pytest.fixture(scope="module")
def tokenizer():
    return keras_hub.models.BertTokenizer(vocabulary=VOCABULARY, lowercase=True)


def pieces_of(tokenizer, word: str) -> list[int]:
    found = tokenizer(tf.constant([word]))[0]
    return list(found) if isinstance(found, list) else found.numpy().tolist()  # keras-hub: lists when eager


def first_pieces(tokenizer, words):
    return [(pieces_of(tokenizer, w) or [tokenizer.token_to_id("[UNK]")])[0] for w in words]


@pytest.mark.parametrize("length, stride", [(64, 30), (12, 5), (10, 1), (10, 8)])
def test_each_word_is_read_at_its_first_piece_with_the_most_context(tokenizer, length, stride):
    rng = np.random.default_rng(length + stride)
    sentences = [[str(w) for w in rng.choice(list(WORDS) + ["Zebra", "pancakes", "\u200b"], size=int(rng.integers(1, 30)))]
                 for _ in range(7)] + [["the"]]
    out = {k: v.numpy() for k, v in WordPieceWindows(tokenizer, sequence_length=length, stride=stride)(
        tf.constant(pad_words(sentences))).items()}
    flat = out["token_ids"].reshape(-1)
    width = out["token_ids"].shape[1]
    assert width <= length and (out["token_ids"][:, 0] == tokenizer.cls_token_id).all()
    for s, words in enumerate(sentences):
        assert out["word_mask"][s].tolist() == [True] * len(words) + [False] * (out["word_mask"].shape[1] - len(words))
        rows = out["word_index"][s, :len(words)]
        assert flat[rows].tolist() == first_pieces(tokenizer, words)  # the word's own first piece
        pieces = [len(pieces_of(tokenizer, w)) or 1 for w in words]
        firsts = np.cumsum([0] + pieces[:-1])
        room, total = length - 2, sum(pieces)
        starts = list(range(0, max(total - room, 0) + stride, stride))
        starts = starts[:1 + -(-max(total - room, 0) // stride)]
        margins = [max(min(p - a, min(a + room, total) - 1 - p) for a in starts if a <= p < min(a + room, total))
                   for p in firsts]
        chosen = [row % width - 1 for row in rows]  # the piece's position in its window, after [CLS]
        for p, m, position, row in zip(firsts, margins, chosen, rows):
            window_start = p - position
            window_end = min(window_start + room, total)
            assert min(p - window_start, window_end - 1 - p) == m  # the best margin any window gives it


def test_a_sentence_ten_windows_long_is_read_whole(tokenizer):
    words = ["the"] * 200
    out = {k: v.numpy() for k, v in WordPieceWindows(tokenizer, sequence_length=24, stride=11)(
        tf.constant(pad_words([words, ["good"]]))).items()}
    assert len(out["token_ids"]) >= 10 + 1  # the long sentence's windows and the short one's
    assert len(set(out["word_index"][0].tolist())) == 200  # every word read, each at a place of its own
    assert out["padding_mask"].sum(axis=1).max() == 24


def test_casing_classes_come_with_the_windows_only_when_asked(tokenizer):
    """The uncased tokenizer reads "Paris" and "paris" alike; with `casing` each word also brings its casing class
    (what a tagger with `model.casing` embeds), padding 0."""
    from kpipe.preprocessing.tagging import casing_ids
    from kpipe.tokens import CASING_CLASSES

    words = tf.constant(pad_words([["Paris", "paris", "PARIS", "42", "."], ["the"]]))
    plain = WordPieceWindows(tokenizer, sequence_length=12, stride=5)(words)
    cased = WordPieceWindows(tokenizer, sequence_length=12, stride=5, casing=True)(words)
    assert "casing" not in plain and sorted(cased) == sorted([*plain, "casing"])
    casing = cased["casing"].numpy()
    assert casing.tolist() == casing_ids(words).numpy().tolist()
    assert len(set(casing[0].tolist())) == 5 and casing[1, 1:].tolist() == [0] * 4
    assert casing.max() < CASING_CLASSES
    np.testing.assert_array_equal(cased["token_ids"].numpy(), plain["token_ids"].numpy())
