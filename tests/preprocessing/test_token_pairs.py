"""Tokens and ids for seq2seq pairs: unknowns, truncation, padding, and joining outputs back."""

import numpy as np
import tensorflow as tf

from kpipe.models.seq2seq import END, START, UNKNOWN
from kpipe.preprocessing.token_pairs import (PairPreprocessingConfig, TokenTable, fit_tokens, make_pair_dataset,
                                             pad_batch, source_ids, target_ids)

PRE = PairPreprocessingConfig(source_tokens="char", target_tokens="word", max_source_length=4, max_target_length=3)


def test_vocabulary_is_most_frequent_first_and_lowercased():
    assert fit_tokens(["Abba", "cab"], "char", lowercase=True) == ["a", "b", "c"]
    assert fit_tokens(["K AE T", "K AA R"], "word") == ["K", "AA", "AE", "R", "T"]


def test_unseen_characters_map_to_unknown_and_long_sources_are_cut():
    table = TokenTable(["a", "b", "c"], joiner="")
    ids = source_ids(tf.constant(["ABz", "abcabc", ""]), table, PRE)
    assert ids.to_list() == [[4, 5, UNKNOWN], [4, 5, 6, 4], []]
    padded = pad_batch(ids)
    assert padded.numpy().tolist() == [[4, 5, UNKNOWN, 0], [4, 5, 6, 4], [0, 0, 0, 0]]  # right-padded
    assert pad_batch(source_ids(tf.constant([""]), table, PRE)).shape == (1, 1)  # never zero-width


def test_targets_end_with_the_end_token_after_truncation():
    table = TokenTable(["K", "AE", "T"], joiner=" ")
    assert target_ids(tf.constant(["K AE T T", "K"]), table, PRE).to_list() == [[4, 5, 6, END], [4, END]]


def test_join_stops_at_the_end_token():
    table = TokenTable(["K", "AE", "T"], joiner=" ")
    assert table.join(tf.constant([[4, 5, END, 6], [6, 0, 0, 0], [END, 4, 4, 4]])).numpy().tolist() == [
        b"K AE", b"T", b""]


def test_dataset_is_teacher_forced_and_right_padded_per_batch():
    source, target = TokenTable(["a", "b"], ""), TokenTable(["X", "Y"], " ")
    ds = make_pair_dataset([("ab", "X Y"), ("a", "X")], source, target, PRE, batch_size=2)
    inputs, outputs = next(iter(ds))
    np.testing.assert_array_equal(inputs["source"], [[4, 5], [4, 0]])
    np.testing.assert_array_equal(inputs["target_in"], [[START, 4, 5], [START, 4, 0]])
    np.testing.assert_array_equal(outputs, [[4, 5, END], [4, END, 0]])
