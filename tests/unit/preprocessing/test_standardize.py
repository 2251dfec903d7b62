import re

import keras
import numpy as np
import pytest
import tensorflow as tf

from kpipe.preprocessing.standardize import keras_standardize, lower_and_split_punctuation

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
