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

import tensorflow as tf

from kpipe.config.pipeline import PipelineConfig, RunResult
from kpipe.datasets.corpus import load_corpus
from kpipe.portable.export_files import VECTORS_FILE
from kpipe.exports import run_files, saved_model
from kpipe.families.word2vec.config import Word2VecConfig
from kpipe.families.word2vec.model import negative_sampling_loss
from kpipe.families.word2vec.sparse_sgd import SparseSGDTrainer, expand_shared_negatives
from kpipe.preprocessing.configs import SkipGramConfig
from kpipe.preprocessing.skipgrams import build_corpus, corpus_words, epoch_examples, make_skipgram_dataset
from kpipe.tasks.registry import check_replicas, family_spec
from kpipe.tasks.word2vec.signatures import WordVectorServing, write_projector_files, write_word2vec_text
from kpipe.training.run import Run
from kpipe.vectors.word_vectors import WordVectors, write_glove_text

log = logging.getLogger(__name__)


PROBE_WORDS = ("god", "king", "water", "love", "israel", "bread", "night", "mountain", "gold", "sin")


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
    build_model = family_spec("word2vec", model_config.family).build
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
        write_glove_text(vectors, path / VECTORS_FILE)
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
