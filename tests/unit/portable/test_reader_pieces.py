"""The portable reader's word pieces with character offsets (NumPy, `kpipe.portable.reader.OffsetPieces`) equal to
the graph's (`kpipe.preprocessing.answer_windows.WordPieceOffsets`, byte offsets turned into characters), on tweets
and edge cases."""

import keras_hub
import pytest
import tensorflow as tf

from kpipe.datasets.text_classification import TextClassificationDataConfig, load_text_classification
from kpipe.portable.reader import OffsetPieces
from kpipe.preprocessing.answer_windows import WordPieceOffsets
from kpipe.pretrained.inputs import wordpiece_settings
from tests.unit.preprocessing.test_answer_windows import EDGE_CASES


@pytest.fixture(scope="module")
def texts_and_tokenizer(tweet_wordpieces):
    splits = load_text_classification(TextClassificationDataConfig(source="embedded", name="tweets-sentiment"))
    vocabulary = tweet_wordpieces  # tests/conftest.py: learnt once per session
    return [str(t) for t in splits.test.texts[:800]] + EDGE_CASES, keras_hub.models.BertTokenizer(
        vocabulary=vocabulary, lowercase=True)


def test_numpy_pieces_and_character_offsets_equal_the_graphs(texts_and_tokenizer):
    texts, tokenizer = texts_and_tokenizer
    settings = wordpiece_settings(tokenizer, {"sequence_length": 64, "start_value": [tokenizer.cls_token_id],
                                              "end_value": [tokenizer.sep_token_id],
                                              "pad_value": tokenizer.pad_token_id}, "post")
    portable = OffsetPieces(tokenizer.get_vocabulary(), settings)
    ids, starts, ends = WordPieceOffsets(tokenizer)(tf.constant(texts))
    for text, row, first, last in zip(texts, ids.to_list(), starts.to_list(), ends.to_list()):
        raw = text.encode("utf-8")
        characters = lambda offset: len(raw[:offset].decode("utf-8"))  # noqa: E731
        assert portable.with_offsets(text) == (row, [characters(a) for a in first], [characters(b) for b in last]), \
            text
