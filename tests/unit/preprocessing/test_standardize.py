import re

import keras
import numpy as np
import pytest
import tensorflow as tf

from kpipe.preprocessing.standardize import (keras_standardize, lower_and_split_punctuation,
                                             lower_and_split_punctuation_and_contractions)

TEXTS = ["Great!! :) @United it's #fail", "Café ÉTÉ 10% -- ok?", "no punctuation here", ""]


def test_split_punctuation_matches_pythons_regex_on_unicode_text():
    ours = [t.decode() for t in lower_and_split_punctuation(tf.constant(TEXTS)).numpy()]
    assert ours == [re.sub(r"([^\w\s'])", r" \1 ", t.lower()) for t in TEXTS]


def test_a_vectorizer_keeps_punctuation_and_emoticons_as_tokens():
    vectorizer = keras.layers.TextVectorization(standardize=keras_standardize("lower_and_split_punctuation"))
    vectorizer.adapt(TEXTS)
    vocabulary = vectorizer.get_vocabulary()
    assert {"!", ":", ")", "#", "fail", "it's", "café", "%"} <= set(vocabulary)
    ids = vectorizer(tf.constant(["great :)"])).numpy()[0]
    assert [vocabulary[i] for i in ids if i] == ["great", ":", ")"]


@pytest.mark.parametrize("name", ["lower_and_strip_punctuation", "lower", "none"])
def test_the_other_names_are_keras_own_choices(name):
    vectorizer = keras.layers.TextVectorization(standardize=keras_standardize(name))
    vectorizer.adapt(["Great!!"])
    expected = {"lower_and_strip_punctuation": "great", "lower": "great!!", "none": "Great!!"}[name]
    assert expected in vectorizer.get_vocabulary()
    assert np.all(vectorizer(tf.constant(["Great!!"])).numpy() > 1)


def test_contractions_split_as_glove_has_them_and_other_apostrophes_stay():
    texts = ["I'm sure it's fine, can't wait!! We\u2019ll see", "don't rock'n'roll o'neill's", "they'd", "'s"]
    ours = [t.decode().split() for t in lower_and_split_punctuation_and_contractions(tf.constant(texts)).numpy()]
    # The Penn Treebank tokenizer's splits (nltk's TreebankWordTokenizer gives the same on these words)
    assert ours == [["i", "'m", "sure", "it", "'s", "fine", ",", "ca", "n't", "wait", "!", "!", "we", "'ll", "see"],
                    ["do", "n't", "rock'n'roll", "o'neill", "'s"], ["they", "'d"], ["'s"]]


def test_contractions_find_glove_vectors_that_the_unsplit_words_miss():
    from kpipe.vectors.word_vectors import load_word_vectors

    glove = load_word_vectors("glove:6B.50d")
    words = ["i'm", "can't", "it's", "don't", "we'll"]
    pieces = lower_and_split_punctuation_and_contractions(tf.constant([" ".join(words)])).numpy()[0].decode().split()
    assert not any(w in glove.index for w in words)
    assert all(p in glove.index for p in pieces), [p for p in pieces if p not in glove.index]
