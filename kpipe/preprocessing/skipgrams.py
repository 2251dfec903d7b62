"""word2vec training examples (skip-gram pairs or CBOW windows), vectorised in NumPy, served by tf.data.

Per epoch (as in Mikolov et al. 2013 and the original word2vec code):
  1. frequent words are subsampled: a token of relative frequency f is kept with probability
     (sqrt(f / t) + 1) * t / f (t = `subsample`; word2vec's and gensim's formula);
  2. each remaining token draws a window size b in [1, window]; every other token within b positions
     in the same line is one of its contexts: a (target, context) pair;
  3. each pair (CBOW: each target with its window of contexts) gets `negatives` words drawn from
     the unigram distribution raised to 0.75.
All of it is array arithmetic over the whole corpus, no Python loop per pair.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from typing import Iterator, Sequence

import numpy as np
import tensorflow as tf

from kpipe.errors import DataError
from kpipe.preprocessing.configs import SkipGramConfig
from kpipe.preprocessing.prefetch import prefetched

EPOCH_SEEDS = 1 << 16  # distinct epoch seeds (the shuffle that draws them holds this many numbers)
TOKEN = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")


def tokenize(line: str, config: SkipGramConfig) -> list[str]:
    """Words of a line: runs of letters and digits, with an apostrophe suffix kept ("god's")."""
    return TOKEN.findall(line.lower() if config.lowercase else line)


@dataclasses.dataclass(frozen=True)
class Corpus:
    """The corpus as word ids: `ids` all lines concatenated, `line_of[i]` the line of token i."""

    words: list[str]        # vocabulary, most frequent first
    counts: np.ndarray      # (vocabulary,) corpus counts
    ids: np.ndarray         # (tokens,) int32, out-of-vocabulary words removed
    line_of: np.ndarray     # (tokens,) int32


def build_corpus(lines: Sequence[str], config: SkipGramConfig) -> Corpus:
    """Vocabulary (min_count, max_vocabulary) and the token ids of the corpus.

    Raises:
        DataError: no words, or no word seen at least `min_count` times, or fewer than 2 words left.
    """
    tokenized = [tokenize(line, config) for line in lines]
    counts = Counter(word for words in tokenized for word in words)
    if not counts:
        raise DataError("the corpus has no words (letters or digits); give a text file with one document or "
                        "sentence per line")
    kept = [(w, c) for w, c in sorted(counts.items(), key=lambda wc: (-wc[1], wc[0])) if c >= config.min_count]
    if config.max_vocabulary:
        kept = kept[:config.max_vocabulary]
    if len(kept) < 2:
        raise DataError(f"min_count={config.min_count} leaves {len(kept)} of the corpus's {len(counts):,} distinct "
                        f"words (the most frequent appears {max(counts.values())} times); lower "
                        "preprocessing.min_count or use a larger corpus")
    index = {w: i for i, (w, _) in enumerate(kept)}
    ids, line_of = [], []
    for number, words in enumerate(tokenized):
        line_ids = [index[w] for w in words if w in index]
        ids.extend(line_ids)
        line_of.extend([number] * len(line_ids))
    return Corpus([w for w, _ in kept], np.array([c for _, c in kept], np.int64),
                  np.array(ids, np.int32), np.array(line_of, np.int32))


def keep_probabilities(counts: np.ndarray, subsample: float) -> np.ndarray:
    """P(keep) per word: min(1, (sqrt(f / t) + 1) * t / f), f the word's share of all tokens."""
    if subsample <= 0:
        return np.ones(len(counts))
    frequency = counts / counts.sum()
    return np.minimum(1.0, (np.sqrt(frequency / subsample) + 1) * subsample / frequency)


def noise_distribution(counts: np.ndarray, power: float = 0.75) -> np.ndarray:
    weights = counts.astype(np.float64) ** power
    return weights / weights.sum()


def skipgram_pairs(corpus: Corpus, config: SkipGramConfig, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """One epoch's (targets, contexts): subsampled, random window sizes, within lines, shuffled."""
    ids, line_of = _subsample(corpus, config, rng)
    reach = rng.integers(1, config.window + 1, size=len(ids))  # each target's window size b
    targets, contexts = [], []
    for distance in range(1, config.window + 1):
        same_line = line_of[:-distance] == line_of[distance:]
        left, right = ids[:-distance], ids[distance:]
        forward = same_line & (reach[:-distance] >= distance)   # target on the left, context `distance` after
        backward = same_line & (reach[distance:] >= distance)   # target on the right, context `distance` before
        targets += [left[forward], right[backward]]
        contexts += [right[forward], left[backward]]
    targets, contexts = np.concatenate(targets), np.concatenate(contexts)
    order = rng.permutation(len(targets))
    return targets[order], contexts[order]


def _subsample(corpus: Corpus, config: SkipGramConfig, rng: np.random.Generator):
    keep = rng.random(len(corpus.ids)) < keep_probabilities(corpus.counts, config.subsample)[corpus.ids]
    return corpus.ids[keep], corpus.line_of[keep]


def cbow_windows(corpus: Corpus, config: SkipGramConfig, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """One epoch's CBOW examples: (contexts (n, 2·window), targets (n,)), shuffled.

    Context slots outside the target's random window or its line hold `len(corpus.words)` (padding);
    targets with no context at all are dropped.
    """
    ids, line_of = _subsample(corpus, config, rng)
    padding = len(corpus.words)
    reach = rng.integers(1, config.window + 1, size=len(ids))
    offsets = [o for o in range(-config.window, config.window + 1) if o != 0]
    contexts = np.full((len(ids), len(offsets)), padding, np.int32)
    positions = np.arange(len(ids))
    for column, offset in enumerate(offsets):
        other = positions + offset
        valid = (other >= 0) & (other < len(ids)) & (reach >= abs(offset))
        valid[valid] &= line_of[other[valid]] == line_of[valid]
        contexts[valid, column] = ids[other[valid]]
    has_context = (contexts != padding).any(axis=1)
    order = rng.permutation(int(has_context.sum()))
    return contexts[has_context][order], ids[has_context][order]


def epoch_examples(corpus: Corpus, config: SkipGramConfig, epoch_seed, cbow: bool = False) -> tuple[np.ndarray, ...]:
    """One epoch's examples, cut to whole groups of `negatives_shared_by`: (first, second, negatives).

    Skip-gram: (targets, contexts); CBOW: (contexts (n, 2·window), targets). `negatives` has one row
    of `config.negatives` noise words per group of `negatives_shared_by` consecutive examples.
    """
    rng = np.random.default_rng(epoch_seed)
    first, second = cbow_windows(corpus, config, rng) if cbow else skipgram_pairs(corpus, config, rng)
    group = config.negatives_shared_by
    usable = len(first) - len(first) % group
    cumulative = np.cumsum(noise_distribution(corpus.counts))
    negatives = np.searchsorted(cumulative, rng.random((usable // group, config.negatives))).astype(np.int32)
    np.minimum(negatives, len(cumulative) - 1, out=negatives)
    return first[:usable], second[:usable], negatives


def make_skipgram_dataset(corpus: Corpus, config: SkipGramConfig, *, batch_size: int, seed: int,
                          cbow: bool = False, batches_per_block: int = 0) -> tf.data.Dataset:
    """Batches of (inputs, labels (b, 1 + k)), fresh each epoch; labels are 1 for column 0, else 0.

    Skip-gram inputs: (targets (b,), contexts (b,), negatives (b / g, k)).
    CBOW inputs: (contexts (b, 2·window), targets (b,), negatives (b / g, k)).
    g is `config.negatives_shared_by` (1: a row of noise words per example).
    With `batches_per_block` > 0, each element stacks up to that many batches (a leading axis on
    every tensor), for `SparseSGDTrainer`, which loops over them in one call.
    """
    group, k = config.negatives_shared_by, config.negatives
    if batch_size % group:
        raise ValueError(f"batch_size {batch_size} is not a multiple of negatives_shared_by {group}")

    def epochs(epoch_seed) -> Iterator:
        """The epoch's examples in blocks of whole batches (one block for plain batches, cut by
        tf.data below), then the rest (maybe none) as a block of one smaller batch."""
        first, second, negatives = epoch_examples(corpus, config, [seed, int(epoch_seed)], cbow)
        whole = len(first) // batch_size * batch_size
        block = (batches_per_block * batch_size) if batches_per_block else max(whole, batch_size)
        bounds = [(start, min(start + block, whole)) for start in range(0, whole, block)] + [(whole, len(first))]
        for start, stop in bounds:
            if stop > start:
                yield tuple(a[start // g:stop // g].reshape(-1, min(batch_size, stop - start) // g, *a.shape[1:])
                            for a, g in ((first, 1), (second, 1), (negatives, group)))

    first_spec = tf.TensorSpec([None, None, 2 * config.window] if cbow else [None, None], tf.int32)
    signature = (first_spec, tf.TensorSpec([None, None], tf.int32), tf.TensorSpec([None, None, k], tf.int32))
    labels = tf.constant([1.0] + [0.0] * k)

    def with_labels(first, second, negatives):
        return (first, second, negatives), tf.broadcast_to(labels, tf.concat([tf.shape(second), [1 + k]], 0))

    # Each new iterator (each epoch) reshuffles a seeded shuffle and takes its first number as the
    # epoch's seed, so the epochs differ, a rerun repeats them, and a resumed run (which creates the
    # finished epochs' iterators again without reading them) continues with the uninterrupted run's. The generator
    # yields large blocks: a Python call per batch cost about 7 ms, as much as a training step.
    epoch_seeds = tf.data.Dataset.range(EPOCH_SEEDS).shuffle(EPOCH_SEEDS, seed=seed).take(1)
    blocks = epoch_seeds.flat_map(lambda epoch_seed: tf.data.Dataset.from_generator(
        epochs, args=(epoch_seed,), output_signature=signature))
    if not batches_per_block:
        blocks = blocks.flat_map(lambda *block: tf.data.Dataset.from_tensor_slices(block))
    # With blocks, tf.data's cost per element (about 1.5 ms) is paid once per block.
    return prefetched(blocks.map(with_labels))


def corpus_words(corpus: Corpus) -> int:
    """Tokens in the corpus (in-vocabulary, before subsampling): the "words" of words per second."""
    return int(len(corpus.ids))
