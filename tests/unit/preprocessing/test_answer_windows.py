"""The reader's windows: word pieces with offsets equal to keras-hub's own tokenization, offsets that map every piece
back to the raw characters it came from, and windows that cover a long context with the answer wherever it is."""

import keras_hub
import numpy as np
import pytest
import tensorflow as tf

from kpipe.datasets.questions import Question
from kpipe.datasets.text_classification import TextClassificationDataConfig, load_text_classification
from kpipe.preprocessing.answer_windows import AnswerWindows, WordPieceOffsets
from kpipe.tasks.answer.run import answer_pieces, window_features, window_target

EDGE_CASES = ["", "ÉTÉ Café İstanbul ÀÖ ﬁne Straße", "can't won't", "a\u00a0b\tc\u200bd\u00ade", "!!!:)", "x" * 150,
              "emoji 😀 and ünïcödé", "漢字とかな", "[CLS] [UNK] [SEP] inside", "word " * 40, "Åland\u0301 e\u0301 ́"]


@pytest.fixture(scope="module")
def texts_and_tokenizer(tweet_wordpieces):
    splits = load_text_classification(TextClassificationDataConfig(source="embedded", name="tweets-sentiment"))
    vocabulary = tweet_wordpieces  # tests/conftest.py: learnt once per session
    texts = [str(t) for t in splits.test.texts[:1000]] + EDGE_CASES
    return texts, keras_hub.models.BertTokenizer(vocabulary=vocabulary, lowercase=True)


def test_pieces_are_the_tokenizers_own_ids(texts_and_tokenizer):
    texts, tokenizer = texts_and_tokenizer
    ids, _, _ = WordPieceOffsets(tokenizer)(tf.constant(texts))
    expected = tokenizer(tf.constant(texts))
    assert ids.to_list() == (expected if isinstance(expected, list) else expected.to_list())


def test_offsets_map_each_piece_back_to_its_raw_characters(texts_and_tokenizer):
    texts, tokenizer = texts_and_tokenizer
    ids, starts, ends = WordPieceOffsets(tokenizer)(tf.constant(texts))
    vocabulary = tokenizer.get_vocabulary()
    exact = 0
    for text, row, first, last in zip(texts, ids.to_list(), starts.to_list(), ends.to_list()):
        raw = text.encode("utf-8")
        for piece, a, b in zip(row, first, last):
            covered = raw[a:b].decode("utf-8")  # a boundary inside a character would raise here
            token = vocabulary[piece].removeprefix("##")
            if vocabulary[piece] != "[UNK]" and covered.lower() == token:
                exact += 1
            else:  # a word that normalising changed, or unknown: its pieces cover the whole word
                # (the tokenizer splits on ASCII whitespace only: a no-break space belongs to its word)
                assert covered.strip() and not any(c in " \t\n\r\f" for c in covered), (text, covered)
        assert all(b0 <= a1 for b0, a1 in zip(first, first[1:]))  # in order
    assert exact > 0.95 * sum(len(row) for row in ids.to_list())


def test_a_context_ten_windows_long_is_covered_with_its_answer_in_the_last_window(texts_and_tokenizer):
    _, tokenizer = texts_and_tokenizer
    windows = AnswerWindows(tokenizer, sequence_length=32, stride=12, max_question_tokens=8)
    context = " ".join(["the"] * 250) + " answer"
    q = Question("q", "which one ?", context, (("answer", context.index("answer")),), "article")
    out = {k: v.numpy() for k, v in windows(tf.constant([q.question]), tf.constant([q.context])).items()}
    pieces = int(np.sum(out["starts"][0] >= 0))
    room = 32 - 3 - 3  # question "which one ?": 3 pieces
    assert len(out["example"]) == 1 + -(-(pieces - room) // 12) >= 10
    covered = set(out["context_index"][out["context_index"] >= 0].tolist())
    assert covered == set(range(pieces))  # every piece is in a window: nothing skipped, nothing cut
    features, targets = window_features(windows, [q])
    first, last = targets[-1]
    answer_pieces_count = len(tokenizer("answer"))
    assert first > 0 and out["context_index"][-1][first] == pieces - answer_pieces_count
    assert out["context_index"][-1][last] == pieces - 1
    assert (targets[:-1] == 0).all()  # the windows without the answer point at [CLS]
    assert features["token_ids"].shape == (len(targets), 32)


def test_an_answer_is_mapped_to_the_pieces_that_cover_it():
    context = "Paris, the capital of France."
    q = Question("q", "?", context, (("capital of France", 11),), "a")
    starts = np.array([0, 5, 7, 11, 19, 22, 28])  # Paris , the capital of France .
    ends = np.array([5, 6, 10, 18, 21, 28, 29])
    assert answer_pieces(q, starts, ends) == (3, 5)
    index = np.array([-1, -1, -1, 0, 1, 2, 3, 4, 5, 6, -1])
    assert window_target(index, (3, 5)) == (6, 8)
    assert window_target(index[:8], (3, 5)) == (0, 0)  # the window ends before the answer does
    assert answer_pieces(Question("q", "?", context, (), "a"), starts, ends) is None
