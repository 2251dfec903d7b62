"""The language models' byte-level BPE: every text round-trips exactly (WordPiece would not), and the export's
in-graph tokenizer (keras-hub's) gives the same ids as the fast one that tokenizes training text."""

import pytest

from kpipe.preprocessing.byte_bpe import END_OF_TEXT, ByteBPE

TRAIN = ["In the beginning God created the heavens and the earth.",
         "Now the earth was formless and empty.", "And God said, “Let there be light,” and there was light."] * 20
AWKWARD = ["  two  spaces\tand a tab\nand a newline", "émoji 🙂 and ünïcode never seen in training",
           "’curly quotes’ — dashes…", " leading space", "trailing space ", "", "日本語のテキスト", "\u200bzero width"]


@pytest.fixture(scope="module")
def bpe():
    return ByteBPE.learn(TRAIN, vocabulary_size=300)


def test_every_text_round_trips_exactly(bpe):
    for text in TRAIN[:3] + AWKWARD:
        assert bpe.decode(bpe.encode([text])[0]) == text


def test_the_end_of_text_token_is_id_0_and_the_vocabulary_holds_every_byte(bpe):
    assert bpe.end_of_text == 0 and bpe.vocabulary[END_OF_TEXT] == 0
    assert 257 <= bpe.size <= 300


@pytest.mark.slow  # traces the tokenizer graph on a corpus
def test_the_in_graph_tokenizer_gives_the_same_ids_and_text(bpe):
    import tensorflow as tf

    tokenizer = bpe.in_graph()
    texts = TRAIN[:3] + [t for t in AWKWARD if t]
    fast = bpe.encode(texts)
    graph = tf.function(lambda t: tokenizer(t))(tf.constant(texts))
    assert graph.to_list() == fast
    decoded = tf.function(lambda ids: tokenizer.detokenize(ids))(tf.ragged.constant(fast))
    assert [d.decode("utf-8") for d in decoded.numpy()] == texts


def test_save_and_load_give_the_same_tokenizer(bpe, tmp_path):
    bpe.save(tmp_path / "tokenizer.json")
    loaded = ByteBPE.load(tmp_path / "tokenizer.json")
    assert loaded == bpe and loaded.encode(AWKWARD) == bpe.encode(AWKWARD)
