"""The portable tagger's NumPy half (kpipe.portable.tagger) pinned against independent references: Viterbi and the
marginals against brute-force enumeration of every tag sequence, the word split, casing classes and id tables
against the graph's own ops (kpipe.preprocessing.tagging), the entities against seqeval's reading of IOB2 tags."""

import numpy as np
import pytest

from kpipe.portable.tagger import TaggerIds, casing_class, entities, marginals, split_words, viterbi
from tests.unit.layers.test_crf import TAGS, brute_force, crf_with_random_weights


@pytest.mark.parametrize("length", [1, 2, 4])
def test_viterbi_and_the_marginals_equal_brute_force_enumeration(length):
    crf = crf_with_random_weights(seed=3)
    emissions = np.random.default_rng(length).normal(size=(length, TAGS)).astype("float32")
    chain = (crf.transitions.numpy(), crf.start.numpy(), crf.end.numpy())
    _, best, expected, _ = brute_force(crf, emissions, length)
    assert tuple(viterbi(emissions, *chain)) == best
    np.testing.assert_allclose(marginals(emissions, *chain), expected, atol=1e-5)


def test_an_empty_sentence_decodes_to_no_tags():
    chain = (np.zeros((TAGS, TAGS), np.float32), np.zeros(TAGS, np.float32), np.zeros(TAGS, np.float32))
    assert viterbi(np.zeros((0, TAGS), np.float32), *chain).shape == (0,)
    assert marginals(np.zeros((0, TAGS), np.float32), *chain).shape == (0, TAGS)


TEXTS = ["Barack Obama's visit to the U.S. (2016) cost $1,200.50 @john #NLP e-mail",
         "  Zoë  café\tNAÏVE naïve İstanbul 3rd F16 12:30 ½ Ⅻ\u00a0x\u2003y\u200b",
         "", "   ", "a_b__c!!?", "日本語のテキスト と 한국어 ABC def", "ΣΟΦΊΑ σοφία McDonald iPhone x2 -5 3.14"]


def test_words_their_offsets_and_casing_are_the_graphs():
    import tensorflow as tf

    from kpipe.preprocessing.tagging import CASING_PATTERNS, casing_ids, split_words as graph_split
    from kpipe.tokens import CASING_CLASSES

    assert CASING_CLASSES == len(CASING_PATTERNS) + 2  # the embeddings' rows: padding, each pattern, "other"

    words, starts, ends = graph_split(tf.constant(TEXTS))
    for i, text in enumerate(TEXTS):
        expected = [(w.decode(), int(a), int(b)) for w, a, b in zip(words[i].numpy(), starts[i].numpy(),
                                                                     ends[i].numpy())]
        assert split_words(text) == expected, text
        if expected:
            graph = casing_ids(tf.constant([[w for w, _, _ in expected]])).numpy()[0]
            assert [casing_class(w) for w, _, _ in expected] == list(graph), text
    assert casing_class("") == 0


def test_the_id_tables_are_the_graphs():
    import tensorflow as tf

    from kpipe.preprocessing.configs import TaggingPreprocessingConfig
    from kpipe.preprocessing.tagging import TaggerInputs

    sentences = [["Paris", "est", "BELLE", "!"], ["Zoë", "anticonstitutionnellement", "İstanbul"], ["x"]]
    known, chars = ["paris", "est", "zoë", "i̇stanbul"], sorted(set("ParisetBEL!Zoëxanticonl"))
    for lowercase, longest in ((True, 5), (False, 20)):
        pre = TaggingPreprocessingConfig(lowercase=lowercase, max_word_length=longest)
        graph = TaggerInputs(known, chars, pre)
        width = max(len(s) for s in sentences)
        padded = np.array([s + [""] * (width - len(s)) for s in sentences], dtype=object)
        expected = {k: v.numpy() for k, v in graph(tf.constant(padded)).items()}
        found = TaggerIds(known, chars, lowercase, longest)(sentences)
        for name in ("words", "chars", "casing"):
            np.testing.assert_array_equal(found[name], expected[name], err_msg=f"{name}, lowercase={lowercase}")
    assert TaggerIds(known, chars, True, 5)([])["chars"].shape == (0, 0, 1)


def test_entities_are_read_as_seqeval_reads_iob2():
    from seqeval.metrics.sequence_labeling import get_entities

    tags = ["B-PER", "I-PER", "O", "I-LOC", "I-LOC", "B-LOC", "I-ORG", "B-ORG", "O", "I-PER"]
    offsets = [(2 * i, 2 * i + 1) for i in range(len(tags))]
    scores = np.linspace(0.1, 1.0, len(tags)).astype(np.float32)
    found = entities(tags, scores, offsets)
    expected = get_entities(tags)  # (type, first word, last word)
    assert [(kind, begin, end) for kind, begin, end, _ in found] == [
        (kind, offsets[first][0], offsets[last][1]) for kind, first, last in expected]
    assert [score for *_, score in found] == pytest.approx([float(scores[first:last + 1].mean())
                                                           for _, first, last in expected])
