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
from kpipe.preprocessing.configs import SkipGramConfig  # noqa: F401  (re-exported)

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


def make_skipgram_dataset(corpus: Corpus, config: SkipGramConfig, *, batch_size: int, seed: int,
                          cbow: bool = False) -> tf.data.Dataset:
    """Batches of (inputs, labels (b, 1 + k)), fresh each epoch; labels are 1 for column 0, else 0.

    Skip-gram inputs: (targets (b,), contexts (b,), negatives (b, k)).
    CBOW inputs: (contexts (b, 2·window), targets (b,), negatives (b, k)).
    """
    noise = noise_distribution(corpus.counts)
    cumulative = np.cumsum(noise)
    epoch = [0]
    k = config.negatives

    def batches() -> Iterator:
        rng = np.random.default_rng([seed, epoch[0]])
        epoch[0] += 1
        first, second = cbow_windows(corpus, config, rng) if cbow else skipgram_pairs(corpus, config, rng)
        negatives = np.searchsorted(cumulative, rng.random((len(first), k))).astype(np.int32)
        np.minimum(negatives, len(noise) - 1, out=negatives)
        labels = np.zeros((batch_size, 1 + k), np.float32)
        labels[:, 0] = 1.0
        for start in range(0, len(first), batch_size):
            stop = start + batch_size
            yield (first[start:stop], second[start:stop], negatives[start:stop]), labels[:len(first[start:stop])]

    first_spec = tf.TensorSpec([None, 2 * config.window] if cbow else [None], tf.int32)
    signature = ((first_spec, tf.TensorSpec([None], tf.int32), tf.TensorSpec([None, k], tf.int32)),
                 tf.TensorSpec([None, 1 + k], tf.float32))
    return tf.data.Dataset.from_generator(batches, output_signature=signature).prefetch(tf.data.AUTOTUNE)


def corpus_words(corpus: Corpus) -> int:
    """Tokens in the corpus (in-vocabulary, before subsampling): the "words" of words per second."""
    return int(len(corpus.ids))
