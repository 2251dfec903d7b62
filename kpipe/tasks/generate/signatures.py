"""The name-generator export: a `generate` signature (prefix, count, temperature, category, top_k, seed) ->
names, and the sampler inside it.
"""

from __future__ import annotations

from pathlib import Path

import keras
import tensorflow as tf

from kpipe.evaluation import reporting
from kpipe.portable.export_files import GENERATOR_FILE
from kpipe.exports import run_files, saved_model
from kpipe.families.char_rnn.config import CharGeneratorConfig
from kpipe.families.char_sampling import END, SPECIAL_TOKENS, UNKNOWN
from kpipe.families.char_transformer.config import CharTransformerConfig
from kpipe.preprocessing.configs import NamesPreprocessingConfig
from kpipe.preprocessing.names import CharVocabulary
from kpipe.portable.generator import SPECIAL_CHARS
from kpipe.tasks.registry import family_spec



class NameGeneratorServing(tf.Module):
    """(prefix, count, temperature, category, top_k, seed) -> `count` names, all in one graph."""

    def __init__(self, model: keras.Model, config: CharGeneratorConfig | CharTransformerConfig,
                 vocabulary: CharVocabulary, categories: list[str], pre: NamesPreprocessingConfig):
        super().__init__()
        sampler = family_spec("generate", config.family).decoding()  # the family's in-graph sampler
        self.sampler = sampler(model, config, pre.max_length)
        self.model = model
        chars = tf.constant(vocabulary.chars)
        ids = tf.range(SPECIAL_TOKENS, SPECIAL_TOKENS + len(vocabulary.chars), dtype=tf.int32)
        self.char_to_id = tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(chars, ids), UNKNOWN)
        self.id_to_char = tf.concat([tf.constant(SPECIAL_CHARS), chars], axis=0)
        self.categories = tf.constant(categories or [""])
        self.lowercase, self.max_length = pre.lowercase, pre.max_length
        self.generate = tf.function(self._generate, input_signature=[
            tf.TensorSpec([], tf.string, name="prefix"), tf.TensorSpec([], tf.int32, name="count"),
            tf.TensorSpec([], tf.float32, name="temperature"), tf.TensorSpec([], tf.string, name="category"),
            tf.TensorSpec([], tf.int32, name="top_k"), tf.TensorSpec([], tf.int32, name="seed")])

    def _generate(self, prefix, count, temperature, category, top_k, seed):
        checks = [tf.debugging.assert_positive(count, message="count must be > 0"),
                  tf.debugging.assert_positive(temperature, message="temperature must be > 0")]
        with tf.control_dependencies(checks):  # before anything that would fail on them with a cryptic error
            count = tf.identity(count)
        matches = tf.where(tf.equal(self.categories, category))[:, 0]
        known = tf.size(matches) > 0
        no_category = tf.equal(tf.size(self.categories), 1) & tf.equal(self.categories[0], "")
        tf.debugging.Assert(known | no_category | tf.equal(category, ""), ["unknown category", category])
        category_id = tf.cast(tf.cond(known, lambda: matches[0], lambda: tf.constant(0, tf.int64)), tf.int32)
        text = tf.strings.lower(prefix, encoding="utf-8") if self.lowercase else prefix
        # Checked before the prefix loop (as the portable generator does): a 60,000-character prefix would run it
        # 60,000 steps for every one of `count` names.
        short_enough = tf.debugging.assert_less(tf.strings.length(text, unit="UTF8_CHAR"), self.max_length,
                                                message=f"the prefix is too long: this model generates names up to "
                                                        f"{self.max_length} characters")
        with tf.control_dependencies([short_enough]):  # ordered: nothing downstream runs on a long prefix
            text = tf.identity(text)
        prefix_ids = self.char_to_id.lookup(tf.strings.unicode_split(text, "UTF-8"))
        tf.debugging.assert_none_equal(prefix_ids, UNKNOWN, message="prefix has characters the model never saw")
        sampled = self.sampler.sample_ids(prefix_ids, category_id, count, temperature, top_k, seed)
        # Keep characters up to the first END (END and padding map to "").
        chars = tf.gather(self.id_to_char, sampled)
        alive = tf.math.cumsum(tf.cast(tf.equal(sampled, END), tf.int32), axis=1, exclusive=True) == 0
        chars = tf.where(alive, chars, "")
        names = tf.strings.join([tf.fill([count], text), tf.strings.reduce_join(chars, axis=1)])
        if self.lowercase:
            first = tf.strings.upper(tf.strings.substr(names, 0, 1, unit="UTF8_CHAR"), encoding="utf-8")
            names = tf.strings.join([first, tf.strings.substr(names, 1, -1, unit="UTF8_CHAR")])
        return {"names": names}


def write_generator_export(path: Path, *, model: keras.Model, serving: NameGeneratorServing, config, metrics: dict,
                           history: list[dict], work_dir: Path, vocabulary: CharVocabulary,
                           categories: list[str]) -> None:
    """The SavedModel (`generate`), the run files, and the characters and categories beside them."""
    pre = config.preprocessing
    saved_model.write_saved_model(path, tracked=[model, serving], endpoints={"generate": serving.generate})
    run_files.write_run_files(path, model=model, config=config, metrics=metrics, history=history, work_dir=work_dir)
    reporting.write_json({"characters": vocabulary.chars, "categories": categories,
                          "max_length": pre.max_length, "lowercase": pre.lowercase}, path / GENERATOR_FILE)
