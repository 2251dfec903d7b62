"""Tokens and ids for seq2seq pairs: unknowns, truncation, padding, and joining outputs back."""

import numpy as np
import pytest
import tensorflow as tf

from kpipe.families.seq2seq_attention.model import END, START, UNKNOWN
from kpipe.preprocessing.configs import PairPreprocessingConfig
from kpipe.preprocessing.token_pairs import TokenTable, fit_tokens, make_pair_dataset, pad_batch, source_ids, target_ids

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


def test_length_buckets_batch_similar_lengths_and_keep_every_pair_once():
    source, target = TokenTable(list("abcdefgh"), ""), TokenTable(["X"], " ")
    rng = np.random.default_rng(0)
    words = ["".join(rng.choice(list("abcdefgh"), size=n)) for n in rng.integers(1, 9, size=200)]
    pairs = [(w, " ".join(["X"] * len(w))) for w in words]  # target as long as its source
    config = PairPreprocessingConfig(max_source_length=8, max_target_length=8, length_buckets=4)

    def batches(pre):
        return list(make_pair_dataset(pairs, source, target, pre, batch_size=16, shuffle=True, seed=3))

    bucketed, plain = batches(config), batches(PairPreprocessingConfig(max_source_length=8, max_target_length=8))
    seen = sorted(source.join(b[0]["source"]).numpy().tolist()[i].decode() for b in bucketed
                  for i in range(len(b[1])))
    assert seen == sorted(words)  # every pair once, none dropped or repeated

    def padded_steps(batch_list):  # source steps computed, padding included
        return sum(int(np.prod(b[0]["source"].shape)) for b in batch_list)

    spread = [np.ptp((b[0]["source"].numpy() > 0).sum(axis=1)) for b in bucketed]
    assert max(spread) <= 2  # 4 buckets over lengths 1..8: at most three lengths share a batch
    assert padded_steps(bucketed) < 0.8 * padded_steps(plain)
    for inputs, outputs in bucketed:  # teacher forcing is unchanged by bucketing
        shifted = outputs.numpy()[:, :-1]
        np.testing.assert_array_equal(inputs["target_in"].numpy()[:, 1:], np.where(shifted == END, 0, shifted))


def test_subwords_round_trip_case_accents_and_spanish_punctuation_and_survive_reseeding():
    from kpipe.preprocessing.token_pairs import SubwordTable, detokenize_spacing, fit_subwords

    targets = ["¿Dónde está la estación?", "¡Hola, Tom!", "Tom tiene 3.5 gatos.", "Es un libro bien-conocido.",
               "Ana dijo: «sí».", "I'm here (again)."]
    table = SubwordTable(fit_subwords(targets * 20, 200))
    assert table.tokens and all(t not in ("[PAD]", "[END]") for t in table.tokens)
    translate = tf.function(lambda strings: table.join(table.encode(strings).to_tensor()))
    tf.random.set_seed(7)  # discards kernel-held resources (SentencePiece's model): the table must not care
    assert [s.decode() for s in translate(tf.constant(targets)).numpy()] == targets
    ids = table.encode(tf.constant(["¿Dónde?"]))[0].numpy()
    assert ids.min() >= 4  # kpipe's ids 0-3 are padding, unknown, start and end
    spaced = detokenize_spacing(tf.constant(["¿ Dónde está ? ¡ Hola , Tom ! I ' m 3 . 5"])).numpy()[0].decode()
    assert spaced == "¿Dónde está? ¡Hola, Tom! I'm 3.5"


def test_a_cached_subword_vocabulary_is_reused_and_keyed_by_its_strings(tmp_path, monkeypatch):
    from kpipe.preprocessing import token_pairs

    strings = ["¿Dónde está la estación?", "¡Hola, Tom!"] * 10
    first = token_pairs.fit_subwords(strings, 100, cache_dir=tmp_path)
    monkeypatch.setattr(token_pairs, "_fit_subwords", lambda *a: pytest.fail("fitted again"))
    assert token_pairs.fit_subwords(strings, 100, cache_dir=tmp_path) == first
    monkeypatch.undo()
    token_pairs.fit_subwords(strings + ["otro"], 100, cache_dir=tmp_path)  # other strings: fitted, kept apart
    assert len(list(tmp_path.glob("subwords-*.json"))) == 2
