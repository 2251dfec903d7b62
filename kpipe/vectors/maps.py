"""2-D maps of vectors: word vectors (GloVe, word2vec, a classifier's embedding) or sentence embeddings.

PCA or t-SNE from scikit-learn (UMAP when `umap-learn` is installed) bring the vectors to two
dimensions; the labels are spread with adjustText so they stay readable; points can be coloured by
given groups or by k-means clusters of the original vectors.
"""

from __future__ import annotations

import csv
import dataclasses
from pathlib import Path
from typing import Sequence

import numpy as np

from kpipe.errors import KpipeError, MissingDependencyError

METHODS = ("pca", "tsne", "umap")
MIN_POINTS = 3


@dataclasses.dataclass(frozen=True)
class Map:
    """Labelled points in 2-D: `coords[i]` is where `labels[i]` goes, in `groups[i]` (or "")."""

    labels: list[str]
    coords: np.ndarray   # (n, 2)
    groups: list[str]
    method: str

    def write_csv(self, path: str | Path) -> Path:
        path = Path(path)
        with path.open("w", newline="", encoding="utf-8") as f:
            writer = csv.writer(f)
            writer.writerow(["label", "x", "y", "group"])
            for label, (x, y), group in zip(self.labels, self.coords, self.groups):
                writer.writerow([label, f"{x:.6g}", f"{y:.6g}", group])
        return path


def project(vectors: np.ndarray, method: str = "pca", seed: int = 0) -> np.ndarray:
    """(n, dim) vectors -> (n, 2) coordinates.

    pca: the first two principal components (centred; scikit-learn's PCA, whose signs are fixed).
    tsne: t-SNE (perplexity min(30, (n - 1) / 3), PCA initialisation), for local neighbourhoods.
    umap: UMAP, when `umap-learn` is installed.
    """
    vectors = np.asarray(vectors, dtype=np.float64)
    if len(vectors) < MIN_POINTS:
        raise KpipeError(f"a map needs at least {MIN_POINTS} points; got {len(vectors)}")
    if method == "pca":
        from sklearn.decomposition import PCA

        return PCA(n_components=2, random_state=seed).fit_transform(vectors)
    if method == "tsne":
        from sklearn.manifold import TSNE

        perplexity = max(1.0, min(30.0, (len(vectors) - 1) / 3))
        return TSNE(n_components=2, perplexity=perplexity, init="pca", random_state=seed).fit_transform(vectors)
    if method == "umap":
        try:
            import umap
        except ImportError:
            raise MissingDependencyError("--method umap needs umap-learn; install it with: pip install umap-learn "
                                         "(or use --method pca or tsne)") from None
        return umap.UMAP(n_neighbors=min(15, len(vectors) - 1), random_state=seed).fit_transform(vectors)
    raise KpipeError(f"unknown map method '{method}'; use one of: {', '.join(METHODS)}")


def kmeans_groups(vectors: np.ndarray, clusters: int, seed: int = 0) -> list[str]:
    """k-means clusters of the original (unit-length) vectors, as group names "cluster 1" ..."""
    from sklearn.cluster import KMeans

    if not 1 <= clusters <= len(vectors):
        raise KpipeError(f"--clusters must be between 1 and the number of points ({len(vectors)}); got {clusters}")
    unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    ids = KMeans(n_clusters=clusters, n_init=10, random_state=seed).fit_predict(unit)
    return [f"cluster {i + 1}" for i in ids]


def word_points(vectors, words: Sequence[str], source: str) -> tuple[list[str], np.ndarray, list[str]]:
    """The words of `words` that `vectors` (a `WordVectors`) knows, their vectors (n, dim), and the unknown ones.

    Raises:
        KpipeError: fewer than MIN_POINTS words are known.
    """
    rows = vectors.rows(words)
    known = [(w, row) for w, row in zip(words, rows) if row is not None]
    if len(known) < MIN_POINTS:
        raise KpipeError(f"only {len(known)} of the {len(words)} words are in the vocabulary of {source}; "
                         f"a map needs at least {MIN_POINTS}")
    return ([w for w, _ in known], np.stack([vectors.matrix[row] for _, row in known]),
            [w for w, row in zip(words, rows) if row is None])


def parse_groups(lines: Sequence[str], source: str) -> dict[str, str]:
    """Label lines: one `word<TAB or comma>group` each (a header line `word,group` is skipped)."""
    groups = {}
    for number, line in enumerate(lines, start=1):
        parts = line.split("\t") if "\t" in line else line.split(",")
        if len(parts) != 2:
            raise KpipeError(f"{source}, line {number}: expected 'word<TAB>group' or 'word,group'; got {line!r}")
        word, group = parts[0].strip(), parts[1].strip()
        if number == 1 and (word.lower(), group.lower()) in {("word", "group"), ("label", "group")}:
            continue
        groups[word] = group
    return groups


def make_map(labels: Sequence[str], vectors: np.ndarray, *, method: str = "pca", groups: Sequence[str] | None = None,
             clusters: int = 0, seed: int = 0) -> Map:
    """Project `vectors` (one per label) and attach their groups (given, or k-means with `clusters`)."""
    vectors = np.asarray(vectors, dtype=np.float64)
    if clusters:
        groups = kmeans_groups(vectors, clusters, seed)
    return Map(list(labels), project(vectors, method, seed), list(groups) if groups else [""] * len(labels), method)


def plot_map(points: Map, path: str | Path, *, title: str = "") -> Path:
    """Save a PNG of the labelled points (labels spread with adjustText), coloured by group."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from adjustText import adjust_text

    fig, ax = plt.subplots(figsize=(10, 8))
    names = sorted(set(points.groups))
    colours = {name: plt.get_cmap("tab10" if len(names) <= 10 else "tab20")(i % 20) for i, name in enumerate(names)}
    for name in names:
        rows = [i for i, g in enumerate(points.groups) if g == name]
        ax.scatter(points.coords[rows, 0], points.coords[rows, 1], s=28, color=colours[name],
                   label=name or None, alpha=0.85)
    texts = [ax.text(x, y, label, fontsize=9) for label, (x, y) in zip(points.labels, points.coords)]
    adjust_text(texts, ax=ax, arrowprops=dict(arrowstyle="-", color="0.6", lw=0.5))
    if any(names):
        ax.legend(fontsize=9, loc="best")
    axis = {"pca": "principal component", "tsne": "t-SNE dimension", "umap": "UMAP dimension"}[points.method]
    ax.set_xlabel(f"{axis} 1")
    ax.set_ylabel(f"{axis} 2")
    ax.grid(alpha=0.25)
    ax.set_title(title or f"{len(points.labels)} points, {points.method}")
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
