"""A tagger's inputs in TensorFlow ops: word ids, characters, the casing classes; and the raw-text word split with
character offsets (the export's `serving_default`)."""

import numpy as np
import tensorflow as tf

from kpipe.preprocessing.configs import TaggingPreprocessingConfig
from kpipe.preprocessing.tagging import TaggerInputs, fit_tables, make_tagging_dataset, pad_words, split_words

SENTENCES = [(["EU", "rejects", "German", "call"], ["B-ORG", "O", "B-MISC", "O"]),
             (["Peter", "Blackburn", "rejects"], ["B-PER", "I-PER", "O"])]


def test_words_are_looked_up_lower_cased_characters_keep_their_case_and_padding_is_zero():
    pre = TaggingPreprocessingConfig(max_word_length=3)
    words, chars = fit_tables(SENTENCES, pre)
    assert words[0] == "rejects" and "eu" in words and "E" in chars and "k" not in chars  # max_word_length cuts "Blackburn"
    out = TaggerInputs(words, chars, pre)(pad_words([["EU", "REJECTS", "Zed"], ["1,999", ""]]))
    ids = out["words"].numpy()
    assert ids[0, 0] == 2 + words.index("eu") and ids[0, 1] == 2 + words.index("rejects") and ids[0, 2] == 1
    assert ids[1, 1] == 0 and not out["chars"].numpy()[1, 1].any()
    assert out["chars"].numpy()[0, 0, :2].tolist() == [2 + chars.index("E"), 2 + chars.index("U")]
    # numeric 1, holds a digit 2, all lower 3, all upper 4, initial upper 5, other 6; padding 0
    assert out["casing"].numpy().tolist() == [[4, 4, 5], [1, 0, 0]]
    more = TaggerInputs(words, chars, pre)(pad_words([["abc", "a1b", "?", "eBay"]]))["casing"].numpy().tolist()
    assert more == [[3, 2, 6, 6]]


def test_raw_text_splits_at_spaces_and_around_punctuation_with_character_offsets():
    texts = tf.constant(["Barack Obama visited Paris, France.", "Héllo @wörld #fun!", ""])
    words, starts, ends = split_words(texts)
    assert [[w.decode() for w in row] for row in words.to_list()] == [
        ["Barack", "Obama", "visited", "Paris", ",", "France", "."], ["Héllo", "@wörld", "#fun", "!"], []]
    text = "Héllo @wörld #fun!"
    assert [text[s:e] for s, e in zip(starts.to_list()[1], ends.to_list()[1])] == ["Héllo", "@wörld", "#fun", "!"]


def test_batches_pad_tags_with_minus_one_and_keep_sentence_order():
    pre = TaggingPreprocessingConfig()
    words, chars = fit_tables(SENTENCES, pre)
    tags = {"O": 0, "B-ORG": 1, "B-MISC": 2, "B-PER": 3, "I-PER": 4}
    inputs, targets = next(iter(make_tagging_dataset(SENTENCES, tags, TaggerInputs(words, chars, pre), batch_size=2)))
    np.testing.assert_array_equal(targets.numpy(), [[1, 0, 2, 0], [3, 4, 0, -1]])
    assert inputs["words"].numpy()[1, 3] == 0
