"""Character-level name generation end to end: names -> char ids -> RNN or transformer -> NLL beside a
character bigram -> samples -> SavedModel.

`_run_generate` reads top to bottom as its stages: load and cut the names, fit the characters, train, score the
held-out likelihood beside the bigram, sample (novelty, a few per category), publish. The export's `generate`
signature (`signatures.py`): (prefix, count, temperature, category, top_k, seed) -> names, loadable with plain
`tf.saved_model.load(path).generate(...)`.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections import Counter

import keras
import tensorflow as tf

from kpipe.config.pipeline import PipelineConfig, RunResult
from kpipe.datasets.names import load_names
from kpipe.layers.char_bigram import CharBigram
from kpipe.preprocessing.configs import NamesPreprocessingConfig
from kpipe.preprocessing.names import CharVocabulary, make_names_dataset, name_sequences, prepare_name
from kpipe.tasks.registry import family_spec
from kpipe.tasks.generate.signatures import NameGeneratorServing, write_generator_export
from kpipe.training.run import Run

log = logging.getLogger(__name__)



def run_generate(config: PipelineConfig) -> RunResult:
    """Train a character-level generator, score it against a bigram model, sample, and export it."""
    with Run(config) as run:
        return _run_generate(run, config)


def _run_generate(run: Run, config: PipelineConfig) -> RunResult:
    pre: NamesPreprocessingConfig = config.preprocessing
    names = load_and_cut(config)
    vocabulary = CharVocabulary.fit([prepare_name(n, pre) for n, _ in names.train])
    model_config = sized(config, vocabulary, names.categories)
    datasets = {split: make_names_dataset(getattr(names, split), vocabulary, names.categories, pre,
                                          batch_size=run.global_batch, shuffle=split == "train",
                                          seed=config.training.seed)
                for split in ("train", "validation", "test")}
    model, history = train(run, model_config, datasets)
    likelihood = held_out_likelihood(model, datasets["test"], names, vocabulary, pre)
    serving = NameGeneratorServing(model, model_config, vocabulary, names.categories, pre)
    sampled = sample(serving, names, pre, config.training.seed)
    metrics = {
        **run.common_metrics(history),
        "data": {"source": config.data.describe(), "train": len(names.train), "validation": len(names.validation),
                 "test": len(names.test), "categories": names.categories, "characters": len(vocabulary.chars)},
        **likelihood, **sampled,
    }
    version_dir = run.publish(lambda path: write_generator_export(
        path, model=model, serving=serving, config=config, metrics=metrics, history=history, work_dir=run.work_dir,
        vocabulary=vocabulary, categories=names.categories), data=names.train)
    return RunResult(version_dir, metrics, summary_text(metrics, names, version_dir))


# === Stages ===

@dataclasses.dataclass(frozen=True)
class Names:
    """Each split's (name, category) pairs, names longer than preprocessing.max_length left out."""

    train: list
    validation: list
    test: list
    categories: list[str]


def load_and_cut(config: PipelineConfig) -> Names:
    pre: NamesPreprocessingConfig = config.preprocessing
    splits = load_names(config.data)
    keep = lambda pairs: [(n, c) for n, c in pairs if len(n) <= pre.max_length]  # noqa: E731
    names = Names(keep(splits.train), keep(splits.validation), keep(splits.test), splits.categories)
    dropped = sum(splits.sizes().values()) - len(names.train) - len(names.validation) - len(names.test)
    if dropped:
        log.info("Dropped %d names longer than preprocessing.max_length=%d", dropped, pre.max_length)
    return names


def sized(config: PipelineConfig, vocabulary: CharVocabulary, categories: list[str]):
    """The model config with what the data decides: vocabulary, categories (no conditioning without them)."""
    pre: NamesPreprocessingConfig = config.preprocessing
    if not categories and config.model.conditioning != "none":
        log.info("The names have no categories: training without conditioning")
    derived = {"sequence_length": pre.max_length + 1} if config.model.family == "char_transformer" else {}
    log.info("Characters: %d; categories: %d", len(vocabulary.chars), len(categories))
    return dataclasses.replace(config.model, vocabulary_size=vocabulary.size, num_categories=max(1, len(categories)),
                               conditioning=config.model.conditioning if categories else "none", **derived)


def train(run: Run, model_config, datasets: dict) -> tuple[keras.Model, list[dict]]:
    # The recurrent model's padded targets are masked through Keras masks; the transformer's output carries no
    # mask, so its loss leaves padding (id 0) out itself.
    ignore = 0 if model_config.family == "char_transformer" else None
    return run.train(lambda: family_spec("generate", model_config.family).build(model_config),
                     loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=ignore),
                     metrics=[], train_data=datasets["train"], validation_data=datasets["validation"])


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


def held_out_likelihood(model: keras.Model, test_data: tf.data.Dataset, names: Names, vocabulary: CharVocabulary,
                        pre: NamesPreprocessingConfig) -> dict:
    """The model's test NLL per character beside a character bigram's (its smoothing chosen on validation)."""
    model_nll = nll_per_char(model, test_data)
    bigram = CharBigram(vocabulary.size).fit(name_sequences(names.train, vocabulary, pre))
    alpha = bigram.choose_alpha(name_sequences(names.validation, vocabulary, pre))
    bigram_nll = bigram.nll_per_char(name_sequences(names.test, vocabulary, pre))
    log.info("Test NLL per character: model %.4f nats (perplexity %.2f), bigram %.4f (perplexity %.2f): %.1f%% lower",
             model_nll, math.exp(model_nll), bigram_nll, math.exp(bigram_nll), 100 * (1 - model_nll / bigram_nll))
    return {"test_nll_per_char": model_nll, "test_perplexity": math.exp(model_nll),
            "bigram_nll_per_char": bigram_nll, "bigram_perplexity": math.exp(bigram_nll), "bigram_alpha": alpha,
            "nll_reduction_vs_bigram": 1 - model_nll / bigram_nll}


def sample(serving: NameGeneratorServing, names: Names, pre: NamesPreprocessingConfig, seed: int) -> dict:
    """Novelty (samples not in the training names, 100 per frequent category) and 5 samples per category."""
    training_names = {prepare_name(n, pre) for n, _ in names.train}
    by_frequency = ([c for c, _ in Counter(c for _, c in names.train).most_common()] if names.categories else [""])
    novelty_samples = []
    for i, category in enumerate(by_frequency[:10]):
        out = serving.generate(prefix="", count=100, temperature=1.0, category=category, top_k=0, seed=seed + i)
        novelty_samples += [n.decode("utf-8") for n in out["names"].numpy()]
    novel = [n for n in novelty_samples if prepare_name(n, pre) not in training_names and n]
    samples = {c or "all": [n.decode("utf-8") for n in serving.generate(
        prefix="", count=5, temperature=0.8, category=c, top_k=0, seed=seed)["names"].numpy()]
        for c in by_frequency[:8]}
    novelty = len(novel) / max(1, len(novelty_samples))
    log.info("Novelty %.1f%% of %d samples; samples: %s", 100 * novelty, len(novelty_samples),
             {c: s[:3] for c, s in list(samples.items())[:4]})
    return {"novelty": novelty, "novelty_sample_size": len(novelty_samples), "samples_temperature_0.8": samples,
            "most_frequent_category": by_frequency[0] if names.categories else None}


def summary_text(metrics: dict, names: Names, version_dir) -> str:
    samples = metrics["samples_temperature_0.8"]
    example = samples[next(iter(samples))][:5]
    model_nll, bigram_nll = metrics["test_nll_per_char"], metrics["bigram_nll_per_char"]
    most_frequent = metrics["most_frequent_category"]
    return (f"Test NLL {model_nll:.4f} nats/char (perplexity {math.exp(model_nll):.2f}) vs bigram {bigram_nll:.4f} "
            f"({100 * metrics['nll_reduction_vs_bigram']:.1f}% lower); novelty {100 * metrics['novelty']:.1f}%\n"
            f"Samples ({next(iter(samples))}): {', '.join(example)}\n"
            f"Exported to {version_dir}\nTry: kpipe generate {version_dir} --prefix Al --count 10"
            + (f" --category {most_frequent}" if most_frequent else ""))
