"""How well words are tagged: entity-level precision, recall and F1 per type and overall, as conlleval counts them
(through `seqeval`'s default mode: an entity is right when its type and both its ends are), and token accuracy;
beside the two baselines a tagger is measured against, fitted on the same training split: the most frequent tag
of each word (the CoNLL shared task's baseline; unseen words are O) and a feature CRF (`sklearn-crfsuite`: the
word, its shape, affixes and neighbours)."""

from __future__ import annotations

import logging
import time
from collections import Counter, defaultdict

log = logging.getLogger(__name__)


def tagging_metrics(gold: list[list[str]], predicted: list[list[str]]) -> dict:
    """{"entity_f1", "entity_precision", "entity_recall", "token_accuracy", "per_type": {TYPE: {precision,
    recall, f1, support}}} of IOB2 tags."""
    from seqeval.metrics import classification_report, f1_score, precision_score, recall_score

    assert [len(g) for g in gold] == [len(p) for p in predicted], "one predicted tag per gold tag"
    words = sum(len(g) for g in gold)
    right = sum(a == b for g, p in zip(gold, predicted) for a, b in zip(g, p))
    report = classification_report(gold, predicted, output_dict=True, zero_division=0)
    per_type = {kind: {"precision": float(row["precision"]), "recall": float(row["recall"]),
                       "f1": float(row["f1-score"]), "support": int(row["support"])}
                for kind, row in report.items() if not kind.endswith(" avg")}
    return {"entity_f1": float(f1_score(gold, predicted, zero_division=0)),
            "entity_precision": float(precision_score(gold, predicted, zero_division=0)),
            "entity_recall": float(recall_score(gold, predicted, zero_division=0)),
            "token_accuracy": right / max(1, words), "per_type": per_type}


def most_frequent_tag(train: list[tuple[list[str], list[str]]], sentences: list[list[str]]) -> list[list[str]]:
    """Each word's most frequent training tag (ties: the first seen); "O" for words never seen."""
    counts: dict[str, Counter] = defaultdict(Counter)
    for words, tags in train:
        for word, tag in zip(words, tags):
            counts[word][tag] += 1
    best = {word: tags.most_common(1)[0][0] for word, tags in counts.items()}
    return [[best.get(word, "O") for word in words] for words in sentences]


def word_features(words: list[str], i: int) -> dict:
    """The feature CRF's view of word i: the word lower-cased, its shape, 2-3 character prefix and suffix, casing,
    and the same for its neighbours (the usual sklearn-crfsuite NER features)."""
    def of(word: str, prefix: str) -> dict:
        shape = "".join("X" if c.isupper() else "x" if c.islower() else "d" if c.isdigit() else c for c in word)
        return {f"{prefix}lower": word.lower(), f"{prefix}shape": shape[:6], f"{prefix}suffix3": word[-3:],
                f"{prefix}suffix2": word[-2:], f"{prefix}prefix3": word[:3], f"{prefix}title": word.istitle(),
                f"{prefix}upper": word.isupper(), f"{prefix}digit": word.isdigit()}

    features = {"bias": 1.0, **of(words[i], "")}
    features.update(of(words[i - 1], "-1:") if i > 0 else {"BOS": True})
    features.update(of(words[i + 1], "+1:") if i < len(words) - 1 else {"EOS": True})
    return features


def feature_crf(train: list[tuple[list[str], list[str]]], sentences: list[list[str]], *, c1: float = 0.1,
                c2: float = 0.1, max_iterations: int = 100) -> tuple[list[list[str]], float]:
    """A CRF on hand-made features, trained by L-BFGS (elastic-net penalties `c1`, `c2`): its tags for
    `sentences` and its training seconds."""
    import sklearn_crfsuite

    started = time.perf_counter()
    crf = sklearn_crfsuite.CRF(algorithm="lbfgs", c1=c1, c2=c2, max_iterations=max_iterations,
                               all_possible_transitions=True)
    crf.fit([[word_features(words, i) for i in range(len(words))] for words, _ in train],
            [tags for _, tags in train])
    seconds = time.perf_counter() - started
    return [list(tags) for tags in crf.predict([[word_features(w, i) for i in range(len(w))] for w in sentences])], \
        seconds


def baseline_metrics(train, test) -> dict:
    """Both baselines fitted on `train` and scored on `test` ((words, tags) sentences)."""
    words = [w for w, _ in test]
    gold = [t for _, t in test]
    crf_tags, seconds = feature_crf(train, words)
    return {"most_frequent_tag": tagging_metrics(gold, most_frequent_tag(train, words)),
            "feature_crf": {**tagging_metrics(gold, crf_tags), "train_seconds": round(seconds, 2)}}


def comparison_table(metrics: dict) -> str:
    rows = [("model", metrics)] + [(name.replace("_", " "), figures)
                                   for name, figures in metrics.get("baseline", {}).items()]
    lines = [f"{'tagger':24s} {'entity F1':>9s} {'precision':>9s} {'recall':>9s} {'token acc':>9s}"]
    lines += [f"{name:24s} {m['entity_f1']:9.4f} {m['entity_precision']:9.4f} {m['entity_recall']:9.4f} "
              f"{m['token_accuracy']:9.4f}" for name, m in rows]
    return "\n".join(lines)
