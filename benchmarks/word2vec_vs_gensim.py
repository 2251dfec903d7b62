"""kpipe's skip-gram (Keras, tf.data) vs gensim's Word2Vec on the same corpus and settings, one run.

Both train skip-gram with negative sampling on the World English Bible (kpipe's tokenisation, given to
gensim as the same token lists): same dimension, window, negatives, subsampling, min_count and epochs.
Each side runs `--repeats` times, in alternating order (kpipe first, then gensim first, ...).
Printed:
  speed    corpus words per second of training (tokens kept by min_count x epochs / training seconds),
           every run, the median and the range; the ratio of the medians. Target: kpipe ≥ 0.5x gensim
  quality  for the most frequent content words, the overlap of their top-10 cosine neighbours:
           kpipe vs gensim, and gensim vs gensim with another seed (how much two good runs agree);
           and, over word pairs both vocabularies share with the packaged GloVe 6B 50d vectors, the
           Spearman correlation of each model's cosine similarities with GloVe's.

Usage: python benchmarks/word2vec_vs_gensim.py [--epochs 5] [--dim 100] [--repeats 3] [--set training.batch_size=4096]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np


def top_neighbours(matrix: np.ndarray, rows: list[int], k: int = 10) -> list[set[int]]:
    unit = matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
    result = []
    for row in rows:
        scores = unit @ unit[row]
        scores[row] = -np.inf
        result.append(set(np.argpartition(-scores, k)[:k]))
    return result


def overlap(a: list[set[int]], b: list[set[int]]) -> float:
    return float(np.mean([len(x & y) / len(x) for x, y in zip(a, b)]))


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    rank = lambda v: np.argsort(np.argsort(v))  # noqa: E731
    return float(np.corrcoef(rank(x), rank(y))[0, 1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--dim", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3, help="runs of each side, alternating which goes first")
    parser.add_argument("--probe-words", type=int, default=200, help="frequent words whose neighbours are compared")
    parser.add_argument("--set", action="append", default=[], help="more kpipe overrides")
    args = parser.parse_args()

    from gensim.models import Word2Vec

    from kpipe.datasets.corpus import load_corpus
    from kpipe.vectors.word_vectors import load_word_vectors
    from kpipe.tasks.named_pipelines import load_pipeline
    from kpipe.tasks.runner import run_pipeline
    from kpipe.preprocessing.skipgrams import tokenize

    overrides = [f"training.epochs={args.epochs}", f"model.embedding_dim={args.dim}"] + args.set
    config = load_pipeline("word2vec-bible", overrides)
    pre = config.preprocessing
    sentences = [tokenize(line, pre) for line in load_corpus(config.data)]

    def kpipe_run():
        with tempfile.TemporaryDirectory() as folder:
            result = run_pipeline(load_pipeline("word2vec-bible", overrides + [f'export.dir="{folder}"']))
            return load_word_vectors(str(result.export_dir / "vectors.txt")), result.metrics["words_per_second"]

    def gensim_run(seed: int):
        model = Word2Vec(vector_size=args.dim, window=pre.window, negative=pre.negatives, sample=pre.subsample,
                         min_count=pre.min_count, sg=1, workers=os.cpu_count(), seed=seed)
        model.build_vocab(sentences)
        started = time.perf_counter()
        model.train(sentences, total_examples=model.corpus_count, epochs=args.epochs)
        seconds = time.perf_counter() - started
        kept = sum(int(model.wv.get_vecattr(w, "count")) for w in model.wv.index_to_key)
        return model.wv, kept * args.epochs / seconds

    kpipe_rates, gensim_rates, gensim_vectors, ours = [], [], [], None
    for repeat in range(args.repeats):
        for side in (("kpipe", "gensim") if repeat % 2 == 0 else ("gensim", "kpipe")):
            if side == "kpipe":
                vectors, rate = kpipe_run()
                ours = vectors if ours is None else ours
                kpipe_rates.append(rate)
            else:
                vectors, rate = gensim_run(repeat + 1)
                gensim_vectors.append(vectors)
                gensim_rates.append(rate)
            print(f"run {repeat + 1}: {side:6s} {rate:10,.0f} words/s", flush=True)
    if len(gensim_vectors) < 2:
        gensim_vectors.append(gensim_run(2)[0])
    wv, wv_other = gensim_vectors[:2]
    kept_words = sum(int(wv.get_vecattr(w, "count")) for w in wv.index_to_key)

    # === Quality ===
    stop = set("the and of to you in he for i that is his a they will it with them was not all be him my me "
               "your have who said from are on their by this but as at which were up so when there out had".split())
    probes = [w for w in ours.words if w not in stop and w in wv.key_to_index][:args.probe_words]
    index = {w: i for i, w in enumerate(ours.words)}
    shared = [w for w in ours.words if w in wv.key_to_index]
    ours_m = ours.matrix[[index[w] for w in shared]]
    gensim_m = np.stack([wv[w] for w in shared])
    other_m = np.stack([wv_other[w] for w in shared])
    rows = [shared.index(w) for w in probes]
    n_ours, n_gensim, n_other = (top_neighbours(m, rows) for m in (ours_m, gensim_m, other_m))

    glove = load_word_vectors("glove:6B.50d")
    common = [w for w in shared if w in glove.index][:2000]
    rng = np.random.default_rng(0)
    pairs = rng.choice(len(common), size=(5000, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]

    def cosines(lookup) -> np.ndarray:
        a = np.stack([lookup(common[i]) for i in pairs[:, 0]])
        b = np.stack([lookup(common[j]) for j in pairs[:, 1]])
        return (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))

    glove_cos = cosines(glove.vector)
    print(f"\n# {os.cpu_count()} CPUs · World English Bible · {len(ours):,} words (min_count {pre.min_count}) · "
          f"{kept_words:,} tokens · dim {args.dim}, window {pre.window}, negatives {pre.negatives}, "
          f"sample {pre.subsample}, {args.epochs} epochs")
    kpipe_median, gensim_median = float(np.median(kpipe_rates)), float(np.median(gensim_rates))

    def spread(rates):
        return f"{min(rates):,.0f}–{max(rates):,.0f}"

    print(f"{'':28s} {'median words/s':>15s}   range over {args.repeats} runs")
    print(f"{'gensim Word2Vec (sg=1)':28s} {gensim_median:15,.0f}   {spread(gensim_rates)}   "
          f"(workers={os.cpu_count()})")
    print(f"{'kpipe word2vec-bible':28s} {kpipe_median:15,.0f}   {spread(kpipe_rates)}")
    print(f"kpipe / gensim: {kpipe_median / gensim_median:.2f}x (medians; target ≥ 0.5x); run by run: "
          + ", ".join(f"{k / g:.2f}x" for k, g in zip(kpipe_rates, gensim_rates)))
    print(f"\ntop-10 neighbour overlap, {len(probes)} frequent content words:")
    print(f"  kpipe vs gensim            {overlap(n_ours, n_gensim):.3f}")
    print(f"  gensim vs gensim (seed 2)  {overlap(n_gensim, n_other):.3f}")
    print(f"Spearman correlation with GloVe 6B 50d cosines ({len(pairs):,} pairs of {len(common):,} shared words):")
    print(f"  kpipe                      {spearman(cosines(lambda w: ours.matrix[index[w]]), glove_cos):.3f}")
    print(f"  gensim                     {spearman(cosines(lambda w: wv[w]), glove_cos):.3f}")


if __name__ == "__main__":
    main()
