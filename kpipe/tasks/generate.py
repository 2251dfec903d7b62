"""Character-level name generation end to end: names -> char ids -> RNN -> NLL vs bigram -> SavedModel.

The export has a `generate` signature: (prefix, count, temperature, category, top_k, seed) -> names,
loadable with plain `tf.saved_model.load(path).generate(...)`.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
import math
from collections import Counter
from pathlib import Path
from typing import Sequence

import keras
import numpy as np
import tensorflow as tf

from kpipe.exports import run_files, saved_model
from kpipe.exports.open import open_export

from kpipe.evaluation import reporting
from kpipe.config.strict import did_you_mean
from kpipe.datasets.names import NameSplits, load_names
from kpipe.errors import KpipeError
from kpipe.models.char_bigram import CharBigram
from kpipe.models.char_generator import (END, SPECIAL_TOKENS, START, UNKNOWN, CharGeneratorConfig, CharSampler,
                                         build_char_generator)
from kpipe.models.char_transformer import CharTransformerConfig, CharTransformerSampler, build_char_transformer
from kpipe.config.pipeline import PipelineConfig, RunResult
from kpipe.training.run import Run
from kpipe.preprocessing.configs import NamesPreprocessingConfig  # noqa: F401  (re-exported)
from kpipe.preprocessing.prefetch import prefetched

log = logging.getLogger(__name__)

GENERATOR_FILE = "generator.json"
# model family -> (builder, in-graph sampler)
GENERATORS = {"char_rnn": (build_char_generator, CharSampler),
              "char_transformer": (build_char_transformer, CharTransformerSampler)}


# === Character vocabulary ===

@dataclasses.dataclass(frozen=True)
class CharVocabulary:
    """Characters in id order from id 4 (0 padding, 1 start, 2 end, 3 unknown)."""

    chars: list[str]

    @classmethod
    def fit(cls, names: Sequence[str]) -> "CharVocabulary":
        counts = Counter(ch for name in names for ch in name)
        return cls(sorted(counts, key=lambda ch: (-counts[ch], ch)))

    @property
    def size(self) -> int:
        return SPECIAL_TOKENS + len(self.chars)

    @functools.cached_property
    def index(self) -> dict[str, int]:
        """character -> id (built once)."""
        return {ch: i + SPECIAL_TOKENS for i, ch in enumerate(self.chars)}

    def ids(self, text: str) -> list[int]:
        index = self.index
        return [index.get(ch, UNKNOWN) for ch in text]


def _prepare(name: str, pre: NamesPreprocessingConfig) -> str:
    return name.lower() if pre.lowercase else name


def _sequences(pairs, vocabulary: CharVocabulary, pre: NamesPreprocessingConfig) -> list[list[int]]:
    return [[START] + vocabulary.ids(_prepare(n, pre)) + [END] for n, _ in pairs]


def make_names_dataset(pairs, vocabulary: CharVocabulary, categories: list[str], pre: NamesPreprocessingConfig, *,
                       batch_size: int, shuffle: bool = False, seed: int = 0) -> tf.data.Dataset:
    """((chars_in (batch, time), category (batch,)), targets (batch, time)), right-padded with 0."""
    category_index = {c: i for i, c in enumerate(categories)}
    sequences = _sequences(pairs, vocabulary, pre)
    inputs = tf.ragged.constant([s[:-1] for s in sequences], dtype=tf.int32)
    targets = tf.ragged.constant([s[1:] for s in sequences], dtype=tf.int32)
    category_ids = tf.constant([category_index.get(c, 0) for _, c in pairs], tf.int32)
    dataset = tf.data.Dataset.from_tensor_slices((inputs, category_ids, targets))
    if shuffle:
        dataset = dataset.shuffle(len(pairs), seed=seed, reshuffle_each_iteration=True)
    dataset = dataset.map(lambda x, c, y: ((x, c), y))
    return prefetched(dataset.padded_batch(batch_size, padded_shapes=(([None], []), [None])).map(
        lambda xc, y: ((tf.cast(xc[0], tf.int32), xc[1]), tf.cast(y, tf.int32))))


def nll_per_char(model: keras.Model, dataset: tf.data.Dataset) -> float:
    """Mean negative log-likelihood (nats) over every predicted token of `dataset` (characters and END),
    padding excluded: the same average the bigram baseline reports, token-weighted across batches."""
    total, tokens = 0.0, 0
    for inputs, targets in dataset:
        logits = model(inputs, training=False)
        losses = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=targets, logits=logits)
        mask = tf.cast(targets != 0, losses.dtype)
        total += float(tf.reduce_sum(losses * mask))
        tokens += int(tf.reduce_sum(mask))
    return total / max(1, tokens)


# === Serving ===

class NameGeneratorServing(tf.Module):
    """(prefix, count, temperature, category, top_k, seed) -> `count` names, all in one graph."""

    def __init__(self, model: keras.Model, config: CharGeneratorConfig | CharTransformerConfig,
                 vocabulary: CharVocabulary, categories: list[str], pre: NamesPreprocessingConfig):
        super().__init__()
        self.sampler = GENERATORS[config.family][1](model, config, pre.max_length)
        self.model = model
        chars = tf.constant(vocabulary.chars)
        ids = tf.range(SPECIAL_TOKENS, SPECIAL_TOKENS + len(vocabulary.chars), dtype=tf.int32)
        self.char_to_id = tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(chars, ids), UNKNOWN)
        self.id_to_char = tf.concat([tf.constant(["", "", "", "?"]), chars], axis=0)
        self.categories = tf.constant(categories or [""])
        self.lowercase = pre.lowercase
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


# === Running the pipeline ===

def run_generate(config: PipelineConfig) -> RunResult:
    """Train a character-level generator, score it against a bigram model, sample, and export it."""
    with Run(config) as run:
        return _run_generate(run, config)


def _run_generate(run: Run, config: PipelineConfig) -> RunResult:
    pre: NamesPreprocessingConfig = config.preprocessing
    splits: NameSplits = load_names(config.data)
    keep = lambda pairs: [(n, c) for n, c in pairs if len(n) <= pre.max_length]  # noqa: E731
    train, validation, test = keep(splits.train), keep(splits.validation), keep(splits.test)
    dropped = sum(splits.sizes().values()) - len(train) - len(validation) - len(test)
    if dropped:
        log.info("Dropped %d names longer than preprocessing.max_length=%d", dropped, pre.max_length)
    vocabulary = CharVocabulary.fit([_prepare(n, pre) for n, _ in train])
    categories = splits.categories
    if not categories and config.model.conditioning != "none":
        log.info("The names have no categories: training without conditioning")
    derived = {"sequence_length": pre.max_length + 1} if config.model.family == "char_transformer" else {}
    model_config = dataclasses.replace(
        config.model, vocabulary_size=vocabulary.size, num_categories=max(1, len(categories)),
        conditioning=config.model.conditioning if categories else "none", **derived)
    build = GENERATORS[model_config.family][0]
    log.info("Characters: %d; categories: %d", len(vocabulary.chars), len(categories))

    batch_size = run.global_batch
    seed = config.training.seed
    datasets = {name: make_names_dataset(pairs, vocabulary, categories, pre, batch_size=batch_size,
                                         shuffle=name == "train", seed=seed)
                for name, pairs in (("train", train), ("validation", validation), ("test", test))}
    # The recurrent model's padded targets are masked through Keras masks; the transformer's output carries no
    # mask, so its loss leaves padding (id 0) out itself.
    ignore = 0 if model_config.family == "char_transformer" else None
    model, history = run.train(lambda: build(model_config),
                               loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=ignore),
                               metrics=[],
                               train_data=datasets["train"], validation_data=datasets["validation"])

    # === Held-out likelihood: the RNN vs a character bigram on the same test names ===
    model_nll = nll_per_char(model, datasets["test"])
    bigram = CharBigram(vocabulary.size).fit(_sequences(train, vocabulary, pre))
    alpha = bigram.choose_alpha(_sequences(validation, vocabulary, pre))
    bigram_nll = bigram.nll_per_char(_sequences(test, vocabulary, pre))
    log.info("Test NLL per character: model %.4f nats (perplexity %.2f), bigram %.4f (perplexity %.2f): %.1f%% lower",
             model_nll, math.exp(model_nll), bigram_nll, math.exp(bigram_nll), 100 * (1 - model_nll / bigram_nll))

    # === Samples: novelty, and a few per category ===
    serving = NameGeneratorServing(model, model_config, vocabulary, categories, pre)
    training_names = {_prepare(n, pre) for n, _ in train}
    by_frequency = [c for c, _ in Counter(c for _, c in train).most_common()] if categories else [""]
    novelty_samples = []
    for i, category in enumerate(by_frequency[:10]):
        out = serving.generate(prefix="", count=100, temperature=1.0, category=category, top_k=0, seed=seed + i)
        novelty_samples += [n.decode("utf-8") for n in out["names"].numpy()]
    novel = [n for n in novelty_samples if _prepare(n, pre) not in training_names and n]
    samples = {c or "all": [n.decode("utf-8") for n in serving.generate(
        prefix="", count=5, temperature=0.8, category=c, top_k=0, seed=seed)["names"].numpy()]
        for c in by_frequency[:8]}
    metrics = {
        **run.common_metrics(history),
        "data": {"source": config.data.describe(), "train": len(train), "validation": len(validation),
                 "test": len(test), "categories": categories, "characters": len(vocabulary.chars)},
        "test_nll_per_char": model_nll, "test_perplexity": math.exp(model_nll),
        "bigram_nll_per_char": bigram_nll, "bigram_perplexity": math.exp(bigram_nll), "bigram_alpha": alpha,
        "nll_reduction_vs_bigram": 1 - model_nll / bigram_nll,
        "novelty": len(novel) / max(1, len(novelty_samples)), "novelty_sample_size": len(novelty_samples),
        "samples_temperature_0.8": samples,
    }
    log.info("Novelty %.1f%% of %d samples; samples: %s", 100 * metrics["novelty"], len(novelty_samples),
             {c: s[:3] for c, s in list(samples.items())[:4]})

    def write(path: Path) -> None:
        saved_model.write_saved_model(path, tracked=[model, serving], endpoints={"generate": serving.generate})
        run_files.write_run_files(path, model=model, config=config, metrics=metrics, history=history, work_dir=run.work_dir)
        reporting.write_json({"characters": vocabulary.chars, "categories": categories,
                              "max_length": pre.max_length, "lowercase": pre.lowercase}, path / GENERATOR_FILE)

    version_dir = run.publish(write, data=train)
    example = samples[next(iter(samples))][:5]
    summary = (f"Test NLL {model_nll:.4f} nats/char (perplexity {math.exp(model_nll):.2f}) vs bigram {bigram_nll:.4f} "
               f"({100 * metrics['nll_reduction_vs_bigram']:.1f}% lower); novelty {100 * metrics['novelty']:.1f}%\n"
               f"Samples ({next(iter(samples))}): {', '.join(example)}\n"
               f"Exported to {version_dir}\nTry: kpipe generate {version_dir} --prefix Al --count 10"
               + (f" --category {by_frequency[0]}" if categories else ""))
    return RunResult(version_dir, metrics, summary)


# === Generating with an export ===

def generate_names(model: str | Path, *, prefix: str = "", count: int = 10, temperature: float = 1.0,
                   category: str = "", top_k: int = 0, seed: int | None = None,
                   export_dir: str | Path = "saved_models") -> list[str]:
    """Sample names from an exported generator, checking the arguments first.

    Raises:
        KpipeError: count or temperature not positive, negative top_k, an unknown category (lists the
            known ones), or prefix characters the model never saw (names them).
    """
    if count <= 0:
        raise KpipeError(f"count must be > 0. Received: count={count}")
    if not temperature > 0:
        raise KpipeError(f"temperature must be > 0. Received: temperature={temperature}")
    if top_k < 0:
        raise KpipeError(f"top_k must be >= 0 (0 = no top-k). Received: top_k={top_k}")
    opened = open_export(model, task="generate", command="kpipe generate", export_dir=export_dir)
    path = opened.path
    spec_file = path / GENERATOR_FILE
    spec = json.loads(spec_file.read_text(encoding="utf-8"))
    categories = spec["categories"]
    if category and category not in categories:
        known = ", ".join(categories) if categories else "none (this model has no categories)"
        raise KpipeError(f"unknown category '{category}'{did_you_mean(category, categories)}; known: {known}")
    text = prefix.lower() if spec["lowercase"] else prefix
    unknown = sorted({ch for ch in text if ch not in set(spec["characters"])})
    if unknown:
        raise KpipeError(f"the prefix {prefix!r} has character(s) this model never saw: "
                         f"{', '.join(repr(ch) for ch in unknown)}")
    if len(text) >= spec["max_length"]:
        raise KpipeError(f"the prefix is {len(text)} characters; this model generates names up to "
                         f"{spec['max_length']}")
    out = opened.loaded.generate(prefix=tf.constant(prefix), count=tf.constant(count, tf.int32),
                          temperature=tf.constant(temperature, tf.float32), category=tf.constant(category),
                          top_k=tf.constant(top_k, tf.int32),
                          seed=tf.constant(np.random.randint(2 ** 31 - 1) if seed is None else seed, tf.int32))
    return [n.decode("utf-8") for n in out["names"].numpy()]
