from collections import Counter

import numpy as np
import pytest

from kpipe.errors import DataError
from kpipe.preprocessing.configs import SkipGramConfig
from kpipe.preprocessing.skipgrams import build_corpus, keep_probabilities, make_skipgram_dataset, noise_distribution, skipgram_pairs, tokenize

LINES = ["In the beginning God created the heavens and the earth.", "The earth was formless and empty.",
         "God's Spirit was hovering over the waters."]


def test_tokenize_and_vocabulary_with_min_count():
    assert tokenize("God's Spirit, 12 waters!", SkipGramConfig()) == ["god's", "spirit", "12", "waters"]
    corpus = build_corpus(LINES, SkipGramConfig(min_count=2))
    assert corpus.words == ["the", "and", "earth", "was"]  # by count, then alphabetically
    assert list(corpus.counts) == [5, 2, 2, 2]
    assert list(corpus.line_of) == [0] * 5 + [1] * 4 + [2] * 2


def test_empty_corpus_and_min_count_that_removes_everything():
    with pytest.raises(DataError, match="the corpus has no words"):
        build_corpus(["...", "!!"], SkipGramConfig())
    with pytest.raises(DataError, match=r"min_count=50 leaves 0 of the corpus's 16 distinct words \(the most frequent "
                                        r"appears 5 times\); lower preprocessing.min_count"):
        build_corpus(LINES, SkipGramConfig(min_count=50))


def brute_force_pairs(corpus, window):
    pairs = Counter()
    for i in range(len(corpus.ids)):
        for j in range(len(corpus.ids)):
            if i != j and abs(i - j) <= window and corpus.line_of[i] == corpus.line_of[j]:
                pairs[(corpus.ids[i], corpus.ids[j])] += 1
    return pairs


def test_window_one_gives_exactly_the_neighbours_within_each_line():
    corpus = build_corpus(LINES * 3, SkipGramConfig(min_count=1))
    targets, contexts = skipgram_pairs(corpus, SkipGramConfig(min_count=1, window=1, subsample=0),
                                       np.random.default_rng(0))
    assert Counter(zip(targets, contexts)) == brute_force_pairs(corpus, 1)


def test_random_windows_stay_within_the_window_and_the_line():
    corpus = build_corpus(LINES * 20, SkipGramConfig(min_count=1))
    targets, contexts = skipgram_pairs(corpus, SkipGramConfig(min_count=1, window=3, subsample=0),
                                       np.random.default_rng(1))
    allowed = brute_force_pairs(corpus, 3)
    found = Counter(zip(targets, contexts))
    assert all(allowed[pair] >= n for pair, n in found.items())
    # Each target keeps distance d with probability (window - d + 1) / window: 2/3 of all pairs on average.
    assert 0.6 < len(targets) / sum(allowed.values()) < 0.73


def test_subsampling_and_noise_follow_word2vec_formulas():
    counts = np.array([900, 90, 10])
    frequency = counts / 1000
    expected = np.minimum(1, (np.sqrt(frequency / 0.01) + 1) * 0.01 / frequency)
    np.testing.assert_allclose(keep_probabilities(counts, 0.01), expected)
    np.testing.assert_allclose(noise_distribution(counts), counts ** 0.75 / (counts ** 0.75).sum())


def test_dataset_batches_and_fresh_sampling_each_epoch():
    corpus = build_corpus(LINES * 20, SkipGramConfig(min_count=1))
    dataset = make_skipgram_dataset(corpus, SkipGramConfig(min_count=1, negatives=4), batch_size=32, seed=0)
    first = [targets.numpy() for (targets, _, _), _ in dataset]
    second = [targets.numpy() for (targets, _, _), _ in dataset]
    (targets, contexts, negatives), labels = next(iter(dataset))
    assert negatives.shape == (32, 4) and labels.shape == (32, 5)
    assert (labels.numpy()[:, 0] == 1).all() and (labels.numpy()[:, 1:] == 0).all()
    assert not np.array_equal(np.concatenate(first)[:50], np.concatenate(second)[:50])


def test_cbow_windows_hold_the_neighbours_within_the_line():
    from kpipe.preprocessing.skipgrams import cbow_windows

    corpus = build_corpus(LINES, SkipGramConfig(min_count=1))
    contexts, targets = cbow_windows(corpus, SkipGramConfig(min_count=1, window=1, subsample=0),
                                     np.random.default_rng(0))
    padding = len(corpus.words)
    expected = set()
    for i, word in enumerate(corpus.ids):
        left = corpus.ids[i - 1] if i > 0 and corpus.line_of[i - 1] == corpus.line_of[i] else padding
        right = corpus.ids[i + 1] if i + 1 < len(corpus.ids) and corpus.line_of[i + 1] == corpus.line_of[i] else padding
        expected.add((word, left, right))
    assert contexts.shape == (len(corpus.ids), 2)  # every token of these lines has a neighbour
    assert {(t, l, r) for (l, r), t in zip(contexts, targets)} == expected
