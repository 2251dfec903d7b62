"""Made-up data the tests train on, learnable in a few epochs: reviews, SQuAD articles, evidence pairs, English-Spanish
sentences, reversed spellings, a series with two seasons."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from tests.checkpoints import WORDS


POSITIVE = "good great fine lovely superb wonderful".split()


NEGATIVE = "bad awful poor terrible boring dreadful".split()


FILLER = "the a movie film plot actor scene it was and".split()


def tweet_wordpieces(texts: int = 2000, size: int = 1000) -> list[str]:
    """A WordPiece vocabulary of the embedded tweets' first training texts, counted in milliseconds instead of learnt
    (keras-hub's learner takes 15 s on them): the reserved tokens, each character seen twice alone and as a "##"
    piece, then the most frequent whole words, word beginnings and "##" endings. Frequent words stay whole, rarer
    ones split into several pieces, characters seen once become [UNK]: what the tokenizer tests need."""
    import collections
    import re
    import unicodedata

    from kpipe.datasets.text_classification import TextClassificationDataConfig, load_text_classification
    from kpipe.tokens import WORDPIECE_RESERVED

    splits = load_text_classification(TextClassificationDataConfig(source="embedded", name="tweets-sentiment"))
    words = collections.Counter()
    for text in splits.train.texts[:texts]:
        plain = "".join(c for c in unicodedata.normalize("NFD", str(text).lower()) if unicodedata.category(c) != "Mn")
        words.update(re.findall(r"\w+|[^\w\s]", plain))
    characters = collections.Counter()
    for word, n in words.items():
        for c in word:
            characters[c] += n
    vocabulary = list(WORDPIECE_RESERVED)
    for c in sorted(c for c, n in characters.items() if n >= 2):
        vocabulary += [c, "##" + c]
    pieces = collections.Counter()
    for word, n in words.items():
        pieces[word] += n
        for k in (3, 4, 5):
            if len(word) > k:
                pieces[word[:k]] += n
                pieces["##" + word[-k + 1:]] += n
    taken = set(vocabulary)
    for piece, _ in pieces.most_common():
        if len(vocabulary) >= size:
            break
        if piece not in taken:
            vocabulary.append(piece)
            taken.add(piece)
    return vocabulary


def squad_articles(articles: int = 12, paragraphs: int = 3, questions: int = 4, seed: int = 0) -> list[dict]:
    """SQuAD v1.1 articles over the tiny checkpoints' words: each context a run of WORDS, each question "which
    word follows X" answered by the word after X (with its offset), so the data is well formed and learnable."""
    rng = np.random.default_rng(seed)
    data = []
    for a in range(articles):
        paragraphs_out = []
        for p in range(paragraphs):
            words = list(rng.choice(WORDS, size=int(rng.integers(12, 40))))
            context = " ".join(words)
            starts = np.cumsum([0] + [len(w) + 1 for w in words[:-1]])
            qas = []
            for q in range(questions):
                i = int(rng.integers(0, len(words) - 1))
                qas.append({"id": f"a{a}p{p}q{q}", "question": f"which word follows {words[i]} ?",
                            "answers": [{"text": words[i + 1], "answer_start": int(starts[i + 1])}]})
            paragraphs_out.append({"context": context, "qas": qas})
        data.append({"title": f"article {a}", "paragraphs": paragraphs_out})
    return data


def write_squad_json(path: Path, articles: int = 12, seed: int = 0) -> Path:
    path.write_text(json.dumps({"version": "1.1", "data": squad_articles(articles, seed=seed)}))
    return path


def synthetic_reviews(n: int, seed: int = 0) -> pd.DataFrame:
    """Short texts whose label is given by which sentiment words they contain (learnable in 1 epoch)."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        label = i % 2
        words = list(rng.choice(FILLER, rng.integers(2, 12))) + list(
            rng.choice(POSITIVE if label else NEGATIVE, rng.integers(1, 4)))
        rng.shuffle(words)
        rows.append((" ".join(words), label))
    return pd.DataFrame(rows, columns=["text", "label"])


def evidence_pairs(n: int = 1500, seed: int = 0) -> pd.DataFrame:
    """Evidence/claim pairs whose label needs both texts: "supported" when every word of the claim is in the
    evidence, else "unsupported" (two of its three words are not). Each text alone says nothing about the label;
    three pairs share a page ("pageK: ..."), for splits by page."""
    rng = np.random.default_rng(seed)
    vocabulary = [f"w{i}" for i in range(40)]
    rows = []
    for i in range(n):
        evidence = list(rng.choice(vocabulary, 6, replace=False))
        if i % 2:
            claim, label = list(rng.choice(evidence, 3, replace=False)), "supported"
        else:
            others = [w for w in vocabulary if w not in evidence]
            claim, label = list(rng.choice(others, 2, replace=False)) + list(rng.choice(evidence, 1)), "unsupported"
        rng.shuffle(claim)
        rows.append((f"page{i // 3}: " + " ".join(evidence), " ".join(claim), label))
    return pd.DataFrame(rows, columns=["evidence", "claim", "label"])


ENGLISH_SPANISH = {  # a small grammar whose translations keep case, accents, ¿ and ¡
    "numbers": [("one", "un"), ("two", "dos"), ("three", "tres"), ("four", "cuatro"), ("five", "cinco")],
    "things": [("cats", "gatos"), ("dogs", "perros"), ("books", "libros"), ("apples", "manzanas")],
    "places": [("house", "casa"), ("station", "estación"), ("school", "escuela"), ("café", "cafetería")],
    "names": ["Tom", "Mary", "Ana"],
}


def write_english_spanish(path, repeats: int = 1) -> None:
    """Anki-format English/Spanish pairs from a small grammar: "Tom has two cats." -> "Tom tiene dos gatos.",
    "Where is the station?" -> "¿Dónde está la estación?", "Hello, Mary!" -> "¡Hola, Mary!"; a sentence with
    two accepted translations appears twice (multi-reference)."""
    g = ENGLISH_SPANISH
    lines = []
    for name in g["names"]:
        for en, es in g["numbers"]:
            for thing, cosa in g["things"]:
                lines.append(f"{name} has {en} {thing}.\t{name} tiene {es} {cosa}.\tCC-BY 2.0")
        for place, lugar in g["places"]:
            lines.append(f"{name} is at the {place}.\t{name} está en la {lugar}.\tCC-BY 2.0")
        lines.append(f"Hello, {name}!\t¡Hola, {name}!\tCC-BY 2.0")
        lines.append(f"Hello, {name}!\t¡Buenas, {name}!\tCC-BY 2.0")
    for place, lugar in g["places"]:
        lines.append(f"Where is the {place}?\t¿Dónde está la {lugar}?\tCC-BY 2.0")
    Path(path).write_text("\n".join(lines * repeats) + "\n", encoding="utf-8")


SMALL = ["--set", "model.encoder_units=32", "--set", "model.decoder_units=64", "--set", "model.attention_units=32",
         "--set", "model.embedding_dim=16", "--set", "training.batch_size=64"]


def write_reversal_pairs(path, count: int, seed: int) -> None:
    """Spelling reversed, letter by letter ("abc" → "C B A"): attention must learn to look backwards."""
    rng = np.random.default_rng(seed)
    words = ["".join(rng.choice(list("abcdefgh"), rng.integers(2, 7))) for _ in range(count)]
    pd.DataFrame({"source": words, "target": [" ".join(c.upper() for c in reversed(w)) for w in words]}).to_csv(
        path, index=False)


def two_season_series(n=600, seed=0):
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    return 100 + 0.02 * t + 8 * np.sin(2 * np.pi * t / 6) + 5 * np.sin(2 * np.pi * t / 42) + rng.normal(0, 1, n)
