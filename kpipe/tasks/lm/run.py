"""Write text: documents -> a byte-level BPE learnt on the training split -> a causal language model -> perplexity
per word beside an interpolated Kneser-Ney trigram on the same tokens -> samples from fixed prompts, per sampler
-> a SavedModel that writes from a prompt and scores any text."""

from __future__ import annotations

import dataclasses
import logging

import keras
import numpy as np
import tensorflow as tf

from kpipe.config.pipeline import PipelineConfig, RunResult
from kpipe.datasets.documents import Documents, load_documents
from kpipe.errors import DataError
from kpipe.evaluation.kneser_ney import KneserNeyTrigram
from kpipe.evaluation.language_model import diversity, likelihood_figures
from kpipe.preprocessing.byte_bpe import ByteBPE
from kpipe.preprocessing.configs import LanguageModelPreprocessingConfig
from kpipe.preprocessing.prefetch import prefetched
from kpipe.tasks.lm.predict import scored
from kpipe.tasks.lm.signatures import BEAM_WIDTH, LanguageModelServing, write_language_model_export
from kpipe.tasks.registry import family_spec
from kpipe.training.run import Run

log = logging.getLogger(__name__)

DISCOUNTS = (0.5, 0.75, 0.9)  # the Kneser-Ney discounts tried, chosen on the validation split
PROMPTS = 20               # test documents whose first words prompt the samples
PROMPT_WORDS = 4
SAMPLERS = {               # name -> (temperature, top_k, top_p); temperature 0 is greedy
    "greedy": (0.0, 0, 1.0),
    "top_k_40": (1.0, 40, 1.0),
    "top_p_0.9": (1.0, 0, 0.9),
    "random": (1.0, 0, 1.0),
}


def run_lm(config: PipelineConfig) -> RunResult:
    """Train a language model, score it beside a Kneser-Ney trigram, sample from it, and export it."""
    with Run(config) as run:
        return _run_lm(run, config)


def _run_lm(run: Run, config: PipelineConfig) -> RunResult:
    pre: LanguageModelPreprocessingConfig = config.preprocessing
    documents = load_documents(config.data)
    bpe = ByteBPE.learn(documents.train, pre.vocabulary_size)
    tokens = {split: bpe.encode(getattr(documents, split)) for split in ("train", "validation", "test")}
    model_config = derived(config.model, vocabulary_size=bpe.size, max_sequence_length=pre.sequence_length)
    model, history, windows_per_epoch = train(run, model_config, tokens, bpe.end_of_text, pre.sequence_length)
    decoder = family_spec("lm", model_config.family).decoding()(model, model_config)
    serving = LanguageModelServing(model, decoder, bpe, pre.sequence_length, pre.score_stride)
    def score(texts: list[str]) -> dict:  # the export's own `score`, on a batch of texts, as NumPy arrays
        return {key: value.numpy() for key, value in serving.score(tf.constant(texts)).items()}

    metrics = {
        **run.common_metrics(history),
        "data": {"source": config.data.describe(), **documents.sizes(),
                 "words": {split: documents.words(split) for split in ("train", "validation", "test")},
                 "tokens": {split: sum(map(len, ids)) for split, ids in tokens.items()}},
        "vocabulary_size": bpe.size,
        # epoch_seconds include validation: this is the rate of a whole epoch, a little under the training steps'
        "training_tokens_per_second": round(windows_per_epoch * pre.sequence_length / float(np.median(
            [h["epoch_seconds"] for h in history])), 1) if history and "epoch_seconds" in history[0] else None,
        "test": scored(score, documents.test),  # the export's own `score`: what users will measure
        "validation": scored(score, documents.validation),
    }
    if config.evaluation.baseline:
        metrics["baseline"] = kneser_ney(tokens, documents, bpe)
        metrics["model_vs_kneser_ney"] = (metrics["test"]["perplexity_per_word"]
                                          / metrics["baseline"]["test"]["perplexity_per_word"] - 1)
    metrics["samples"] = samples(serving, bpe, documents.test, pre.sequence_length, config.training.seed)
    log.info("%s", summary_table(metrics))
    version_dir = run.publish(lambda path: write_language_model_export(
        path, model=model, serving=serving, config=config, metrics=metrics, history=history, work_dir=run.work_dir,
        bpe=bpe), data=documents.train)
    return RunResult(version_dir, metrics, summary_text(metrics, version_dir))


# === Stages ===

def derived(model_config, **values):
    """The model config with the values kpipe derives from the data, for the fields its family has (a recurrent
    model reads any length: it has no max_sequence_length)."""
    fields = {field.name for field in dataclasses.fields(model_config)}
    return dataclasses.replace(model_config, **{key: value for key, value in values.items() if key in fields})


def windows(documents: list[list[int]], end_of_text: int, length: int) -> np.ndarray:
    """The documents as one stream (each after an end-of-text token) cut into windows of length + 1 tokens."""
    stream = np.fromiter((t for ids in documents for t in (end_of_text, *ids)), dtype=np.int32)
    count = (len(stream) - 1) // length
    return np.stack([stream[i * length:i * length + length + 1] for i in range(count)]) if count else \
        np.zeros((0, length + 1), np.int32)


def language_model_dataset(rows: np.ndarray, batch_size: int, *, shuffle: bool, seed: int) -> tf.data.Dataset:
    """(token_ids, padding_mask) -> the next tokens, a window per example."""
    data = tf.data.Dataset.from_tensor_slices(rows)
    if shuffle:
        data = data.shuffle(len(rows), seed=seed, reshuffle_each_iteration=True)
    inputs = lambda w: ({"token_ids": w[:, :-1], "padding_mask": tf.ones_like(w[:, :-1], tf.bool)}, w[:, 1:])  # noqa: E731
    return prefetched(data.batch(batch_size).map(inputs, num_parallel_calls=tf.data.AUTOTUNE))


def train(run: Run, model_config, tokens: dict, end_of_text: int, length: int):
    rows = {split: windows(tokens[split], end_of_text, length) for split in ("train", "validation")}
    if not len(rows["train"]):
        raise DataError(f"the training split holds {sum(map(len, tokens['train']))} tokens, fewer than one sequence "
                        f"of preprocessing.sequence_length={length} + 1; give more text or a shorter sequence_length")
    if not len(rows["validation"]):  # a short validation split still gets one (shorter) window
        rows["validation"] = windows(tokens["validation"], end_of_text,
                                     max(1, sum(len(ids) + 1 for ids in tokens["validation"]) - 1))
    seed, batch = run.config.training.seed, run.global_batch
    log.info("Training on %d windows of %d tokens, validating on %d", len(rows["train"]), length,
             len(rows["validation"]))
    model, history = run.train(lambda: family_spec("lm", model_config.family).build(model_config),
                               loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=[],
                               train_data=language_model_dataset(rows["train"], batch, shuffle=True, seed=seed),
                               validation_data=language_model_dataset(rows["validation"], batch, shuffle=False,
                                                                      seed=seed))
    return model, history, len(rows["train"])


def kneser_ney(tokens: dict, documents: Documents, bpe: ByteBPE) -> dict:
    """The trigram on the same tokens, each document read after two end-of-text tokens; its discount chosen on the
    validation split."""
    start = [bpe.end_of_text] * 2

    def log_likelihood(model, split):
        return sum(model.log_likelihood(start + ids) for ids in tokens[split])

    model = KneserNeyTrigram(DISCOUNTS[0], vocabulary_size=bpe.size).fit(
        start + ids + [bpe.end_of_text] for ids in tokens["train"])
    best, best_ll = None, -np.inf
    for discount in DISCOUNTS:  # the counts do not depend on the discount: refit nothing, rescore
        model.discount = discount
        ll = log_likelihood(model, "validation")
        if ll > best_ll:
            best, best_ll = discount, ll
    model.discount = best
    figures = {}
    for split in ("validation", "test"):
        figures[split] = likelihood_figures(log_likelihood(model, split), documents.words(split),
                                            sum(map(len, getattr(documents, split))), sum(map(len, tokens[split])))
    return {"model": "interpolated Kneser-Ney trigram on the same tokens", "discount": best,
            "discounts_tried": list(DISCOUNTS), **figures}


def samples(serving: LanguageModelServing, bpe: ByteBPE, texts: list[str], length: int, seed: int) -> dict:
    """Each sampler's continuations of the same prompts (the first words of test documents), and their diversity;
    beam search's too."""
    prompts = [" ".join(text.split()[:PROMPT_WORDS]) for text in texts[:PROMPTS]]
    prompt_tokens = max(len(ids) for ids in bpe.encode(prompts)) + 1  # the export's ids too (tested equal)
    new_tokens = tf.constant(length - prompt_tokens, tf.int32)
    results = {"max_new_tokens": int(new_tokens), "seed": seed}
    def row(out, **settings):
        continuations = [text.decode("utf-8", "replace") for text in out["text"].numpy()]
        return {**settings, **diversity(continuations),
                "examples": [{"prompt": p, "text": c} for p, c in zip(prompts, continuations)]}

    for name, (temperature, top_k, top_p) in SAMPLERS.items():
        results[name] = row(serving.generate(tf.constant(prompts), new_tokens, tf.constant(temperature, tf.float32),
                                             tf.constant(top_k), tf.constant(top_p, tf.float32), tf.constant(seed)),
                            temperature=temperature, top_k=top_k, top_p=top_p)
    results[f"beam_{BEAM_WIDTH}"] = row(serving.beam_search(tf.constant(prompts), new_tokens), beams=BEAM_WIDTH)
    return results


def summary_table(metrics: dict) -> str:
    rows = [("model", metrics["test"])]
    if "baseline" in metrics:
        rows.append((f"Kneser-Ney trigram (D={metrics['baseline']['discount']})", metrics["baseline"]["test"]))
    width = max(len(name) for name, _ in rows)
    lines = [f"{'test split':<{width}}  perplexity/word  bits/char"]
    lines += [f"{name:<{width}}  {figures['perplexity_per_word']:>15.1f}  {figures['bits_per_character']:>9.3f}"
              for name, figures in rows]
    return "\n".join(lines)


def summary_text(metrics: dict, version_dir) -> str:
    greedy = metrics["samples"]["greedy"]["examples"][0]
    return "\n".join([summary_table(metrics), f"Greedy: {greedy['prompt']}|{greedy['text'][:200]}",
                      f"Exported to {version_dir}",
                      f'Try: kpipe generate {version_dir} --prompt "{greedy["prompt"]}" --top-p 0.9 --seed 1'])
