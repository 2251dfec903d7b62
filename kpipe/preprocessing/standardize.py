"""Text standardization choices of `TextVectorization`, by the names pipeline configs use.

"lower_and_split_punctuation" keeps punctuation as tokens of their own ("great!!" → "great ! !",
":)" → ": )", "#fail" → "# fail"; apostrophes stay inside words) where Keras' default strips it:
in short texts such as tweets, "!", "?" and emoticons carry sentiment, and a sequence model sees
their order. "lower_and_split_punctuation_and_contractions" also splits English contractions the way the
Penn Treebank tokenizer behind GloVe's vocabulary does ("can't" → "ca n't", "i'm" → "i 'm", "it's" → "it 's"),
so that pretrained vectors cover them.
"""

from __future__ import annotations

import keras
import tensorflow as tf


@keras.saving.register_keras_serializable(package="kpipe")
def lower_and_split_punctuation(texts: tf.Tensor) -> tf.Tensor:
    """Lower-case, and put spaces around every character that is not a letter, digit, "_", "'" or white space."""
    return tf.strings.regex_replace(tf.strings.lower(texts, encoding="utf-8"), r"([^\p{L}\p{N}_\s'])", r" \1 ")


@keras.saving.register_keras_serializable(package="kpipe")
def lower_and_split_punctuation_and_contractions(texts: tf.Tensor) -> tf.Tensor:
    """`lower_and_split_punctuation`, then "n't" and "'s", "'m", "'re", "'ve", "'ll", "'d" split off the word
    they end (a straight or a typographic apostrophe)."""
    texts = lower_and_split_punctuation(tf.strings.regex_replace(texts, "’", "'"))
    texts = tf.strings.regex_replace(texts, r"(\p{L})n't(\s|$)", r"\1 n't\2")
    return tf.strings.regex_replace(texts, r"(\p{L})'(s|m|re|ve|ll|d)(\s|$)", r"\1 '\2\3")


def keras_standardize(name: str):
    """The `standardize` argument of `keras.layers.TextVectorization` for a config's name."""
    return {"lower_and_strip_punctuation": "lower_and_strip_punctuation", "lower": "lower", "none": None,
            "lower_and_split_punctuation": lower_and_split_punctuation,
            "lower_and_split_punctuation_and_contractions": lower_and_split_punctuation_and_contractions}[name]
