"""word2vec end to end: corpus -> vocabulary -> skip-gram pairs (or CBOW windows) on tf.data ->
negative sampling -> vectors on disk.

The export holds the word vectors in the GloVe and word2vec text formats (kpipe's loader, gensim's
`KeyedVectors.load_word2vec_format`), TensorBoard projector files, and a SavedModel whose `embed`
signature maps raw words to vectors (unknown words to zeros).
"""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

import numpy as np
import tensorflow as tf

from kpipe.exports import run_files, saved_model
from kpipe.datasets.corpus import load_corpus
from kpipe.vectors.word_vectors import WordVectors, write_glove_text
from kpipe.models.word2vec import Word2VecConfig, build_cbow, build_skipgram, negative_sampling_loss
from kpipe.models.word2vec_sgd import SparseSGDTrainer, expand_shared_negatives
from kpipe.config.pipeline import PipelineConfig, RunResult
from kpipe.config.tasks import check_replicas
from kpipe.preprocessing.skipgrams import (SkipGramConfig, build_corpus, corpus_words, epoch_examples,
                                           make_skipgram_dataset)
from kpipe.training.run import Run

log = logging.getLogger(__name__)

PROBE_WORDS = ("god", "king", "water", "love", "israel", "bread", "night", "mountain", "gold", "sin")


class WordVectorServing(tf.Module):
    """Raw words -> vectors (zeros for a word outside the vocabulary)."""

    def __init__(self, vectors: WordVectors):
        super().__init__()
        self.table = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(tf.constant(vectors.words), tf.range(len(vectors), dtype=tf.int64)),
            default_value=len(vectors))
        self.matrix = tf.Variable(np.vstack([vectors.matrix, np.zeros((1, vectors.dim), np.float32)]),
                                  trainable=False)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="words")])
    def embed(self, words):
        return {"vectors": tf.gather(self.matrix, self.table.lookup(words))}


def write_word2vec_text(vectors: WordVectors, path: Path) -> Path:
    """The word2vec text format: a "count dim" header, then the GloVe-style lines."""
    with path.open("w", encoding="utf-8") as f:
        f.write(f"{len(vectors)} {vectors.dim}\n")
        for word, row in zip(vectors.words, vectors.matrix):
            f.write(word + " " + " ".join(f"{x:.6g}" for x in row) + "\n")
    return path


def write_projector_files(vectors: WordVectors, counts: np.ndarray, folder: Path) -> None:
    """vectors.tsv and metadata.tsv for projector.tensorflow.org or TensorBoard's projector."""
    np.savetxt(folder / "vectors.tsv", vectors.matrix, delimiter="\t", fmt="%.6g")
    with (folder / "metadata.tsv").open("w", encoding="utf-8") as f:
        f.write("word\tcount\n")
        for word, count in zip(vectors.words, counts):
            f.write(f"{word}\t{count}\n")


def run_word2vec(config: PipelineConfig) -> RunResult:
    """Train skip-gram word vectors on a corpus and export them."""
    with Run(config) as run:
        return _run_word2vec(run, config)


def _run_word2vec(run: Run, config: PipelineConfig) -> RunResult:
    pre: SkipGramConfig = config.preprocessing
    sparse = config.model.sparse_updates
    check_replicas(config, run.strategy.num_replicas_in_sync)  # before the corpus is read
    corpus = build_corpus(load_corpus(config.data), pre)
    model_config: Word2VecConfig = dataclasses.replace(config.model, vocabulary_size=len(corpus.words),
                                                       negatives=pre.negatives, window=pre.window)
    cbow = model_config.family == "cbow"
    log.info("Vocabulary %d words (min_count %d), %d tokens", len(corpus.words), pre.min_count, len(corpus.ids))
    batch_size = run.global_batch
    build_model = build_cbow if cbow else build_skipgram
    if sparse:
        # Blocks of `steps_per_execution` batches, which the trainer loops over itself. Its linear decay
        # needs the run's length in steps: one epoch's draw times the epochs (epochs differ by a
        # fraction of a percent in their number of pairs). It computes its loss itself.
        dataset = make_skipgram_dataset(corpus, pre, batch_size=batch_size, seed=config.training.seed, cbow=cbow,
                                        batches_per_block=config.training.steps_per_execution)
        examples = len(epoch_examples(corpus, pre, [config.training.seed, 0], cbow)[0])
        total_steps = config.training.epochs * -(-examples // batch_size)
        trained, history = run.train(lambda: SparseSGDTrainer(build_model(model_config), total_steps=total_steps),
                                     loss=None, metrics=[], train_data=dataset, validation_data=None)
        model = trained.word2vec
    else:
        dataset = make_skipgram_dataset(corpus, pre, batch_size=batch_size, seed=config.training.seed, cbow=cbow)
        if pre.negatives_shared_by > 1:  # the Keras model takes a row of noise words per example
            dataset = dataset.map(lambda inputs, labels: ((*inputs[:2], expand_shared_negatives(
                inputs[2], tf.shape(inputs[1])[0])), labels))
        model, history = run.train(lambda: build_model(model_config), loss=negative_sampling_loss, metrics=[],
                                   train_data=dataset, validation_data=None)
    table = model.get_layer("word_vectors").embeddings.numpy()
    vectors = WordVectors(corpus.words, table[:len(corpus.words)])  # (CBOW's extra padding row left out)
    words_per_second = corpus_words(corpus) * len(history) / sum(h.get("epoch_seconds", 0) for h in history) \
        if history else 0.0
    neighbours = {w: [n for n, _ in vectors.neighbors(w, 8)] for w in PROBE_WORDS if w in vectors.index}
    metrics = {
        **run.common_metrics(history),
        "data": {"source": config.data.describe(), "tokens": corpus_words(corpus), "vocabulary": len(corpus.words)},
        "words_per_second": round(words_per_second), "final_loss": history[-1]["loss"] if history else None,
        "neighbours": neighbours,
    }
    log.info("%.0f words/s; neighbours: %s", words_per_second, {w: n[:4] for w, n in list(neighbours.items())[:4]})

    def write(path: Path) -> None:
        serving = WordVectorServing(vectors)
        saved_model.write_saved_model(path, tracked=[serving], endpoints={"embed": serving.embed})
        write_glove_text(vectors, path / "vectors.txt")
        write_word2vec_text(vectors, path / "vectors.w2v.txt")
        write_projector_files(vectors, corpus.counts, path)
        run_files.write_run_files(path, model=model, config=config, metrics=metrics, history=history, work_dir=run.work_dir)

    version_dir = run.publish(write, data=(corpus.ids.tobytes(),))
    probe = next(iter(neighbours), None)
    summary = (f"{len(corpus.words):,} word vectors of dimension {vectors.dim} from {corpus_words(corpus):,} tokens, "
               f"{words_per_second:,.0f} words/s\n"
               + (f"Nearest to '{probe}': {', '.join(neighbours[probe][:6])}\n" if probe else "")
               + f"Exported to {version_dir} (vectors.txt, vectors.w2v.txt, vectors.tsv + metadata.tsv)\n"
               f"Try: kpipe neighbors {probe or 'WORD'} --vectors {version_dir}/vectors.txt")
    return RunResult(version_dir, metrics, summary)
