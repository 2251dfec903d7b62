"""What a language model is judged on: perplexity per word and bits per character (so models with different
tokenizers compare: both are totals over the text, divided by what every tokenizer agrees on), and how varied its
samples are."""

from __future__ import annotations

import math
from collections import Counter


def likelihood_figures(log_likelihood: float, words: int, characters: int, tokens: int) -> dict:
    """Per-word perplexity exp(-ln p / words), bits per character -ln p / ln 2 / characters, and per token."""
    return {"perplexity_per_word": math.exp(-log_likelihood / words),
            "bits_per_character": -log_likelihood / math.log(2) / characters,
            "perplexity_per_token": math.exp(-log_likelihood / tokens),
            "log_likelihood": log_likelihood, "words": words, "characters": characters, "tokens": tokens}


def ngrams(words: list[str], n: int) -> list[tuple]:
    return list(zip(*[words[i:] for i in range(n)]))


def diversity(samples: list[str]) -> dict:
    """distinct-1 and distinct-2 (distinct n-grams over all n-grams of all samples, Li et al. 2016), and the share
    of each sample's 4-grams that repeat an earlier 4-gram of the same sample, averaged over samples."""
    tokenized = [sample.split() for sample in samples]
    figures = {}
    for n in (1, 2):
        grams = [gram for words in tokenized for gram in ngrams(words, n)]
        figures[f"distinct_{n}"] = len(set(grams)) / len(grams) if grams else 0.0
    repeated = []
    for words in tokenized:
        grams = ngrams(words, 4)
        if grams:
            repeated.append(sum(count - 1 for count in Counter(grams).values()) / len(grams))
    figures["repeated_4grams"] = sum(repeated) / len(repeated) if repeated else 0.0
    figures["mean_words"] = sum(map(len, tokenized)) / len(tokenized) if tokenized else 0.0
    return figures
