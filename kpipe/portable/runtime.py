"""Answering with a portable export (`kpipe export`): raw strings in, labels and probabilities out, through
onnxruntime or ai-edge-litert and the NumPy preprocessing of `kpipe.portable.text`. Imports neither TensorFlow nor
Keras: a service needs numpy, onnxruntime or ai-edge-litert, and this package.

    from kpipe.portable.runtime import PortableClassifier
    classifier = PortableClassifier.open("saved_models/sentiment-bilstm/1-onnx")
    classifier.predict(["great crew, thanks!"])[0].label
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from kpipe.errors import KpipeError
from kpipe.portable.export_files import FEATURES_FILE, LABELS_FILE, MANIFEST_FILE, PREPROCESSING_FILE
from kpipe.portable.network import RUNTIMES, Network, open_network
from kpipe.portable.text import NgramCounts, WordIds
from kpipe.portable.wordpiece import WordPieceIds

def is_portable(folder: str | Path) -> bool:
    """Whether `folder` holds a portable export (read from its manifest, without loading anything)."""
    path = Path(folder) / MANIFEST_FILE
    try:
        return json.loads(path.read_text(encoding="utf-8")).get("format") in RUNTIMES
    except (OSError, ValueError, AttributeError):
        return False


@dataclasses.dataclass(frozen=True)
class PortablePrediction:
    """One classified text, as `kpipe.tasks.classify.predict.Prediction`."""

    text: str
    label: str
    probability: float
    probabilities: dict[str, float]
    labels: tuple[str, ...] | None = None
    text_pair: str | None = None


@dataclasses.dataclass
class Member:
    """One network of a portable classifier: its preprocessing, the network, and its weight in the average."""

    preprocess: WordIds | NgramCounts | WordPieceIds
    network: Network
    weight: float

    def probabilities(self, texts: Sequence[str]) -> np.ndarray:
        if isinstance(self.preprocess, (WordIds, WordPieceIds)):  # ids, or a pretrained encoder's named inputs
            # LiteRT's recurrent networks take ids padded to their fixed length; the others each text's own
            inputs = (self.preprocess(texts, self.network.fixed_length or None),)
        else:
            inputs = self.preprocess.sparse(texts)
        output = np.asarray(self.network(*inputs), np.float32)
        return np.concatenate([1.0 - output, output], axis=1) if output.shape[1] == 1 else output


def inside(folder: Path, name: str) -> Path:
    """The file an export's JSON names, which must lie inside the export's folder: a name that is absolute or climbs
    out with `..` would let a crafted export read any file on the machine (a word list as a membership oracle).

    Raises:
        KpipeError: the name points outside the folder.
    """
    path = (folder / name).resolve()
    if not path.is_relative_to(folder.resolve()):
        raise KpipeError(f"the export {folder} names {name!r} among its files, which is outside its folder; an "
                         "export's files are its own: re-export it with kpipe export")
    return path


def member(folder: Path, spec: dict, fmt: str) -> Member:
    vocabulary = inside(folder, spec["vocabulary"]).read_text(encoding="utf-8").split("\n")[:-1]
    if spec["kind"] == "wordpiece":
        settings = json.loads(inside(folder, spec["wordpiece"]).read_text(encoding="utf-8"))
        preprocess = WordPieceIds(vocabulary, settings)
    elif spec["kind"] == "word_ids":
        preprocess = WordIds(vocabulary, standardize=spec["standardize"], split=spec["split"],
                             sequence_length=spec["sequence_length"], truncating=spec["truncating"])
    else:
        preprocess = NgramCounts(vocabulary, np.load(inside(folder, spec["idf"])), standardize=spec["standardize"],
                                 split=spec["split"], ngrams=spec["ngrams"], char_ngrams=spec["char_ngrams"],
                                 weighting=spec["weighting"])
    network = open_network(inside(folder, spec["network"]), fmt, xnnpack_resizes=spec["kind"] != "ngram_counts",
                      threads=min(4, os.cpu_count() or 1) if spec["kind"] == "wordpiece" else None)
    return Member(preprocess, network, float(spec.get("weight", 1.0)))


class PortableExport:
    """What every portable export has: its folder and manifest, for the task it was exported from."""

    task, command = "", ""  # the task a subclass answers with, and the command that does

    def __init__(self, folder: Path):
        self.folder = folder
        self.manifest = self.manifest_of(folder)

    @classmethod
    def manifest_of(cls, folder: Path) -> dict:
        """The manifest of the portable export in `folder` (nothing else is read); a `KpipeError` if it is an export
        of another task (one line naming the command that answers with this task's)."""
        manifest = json.loads((Path(folder) / MANIFEST_FILE).read_text(encoding="utf-8"))
        if manifest.get("task") != cls.task:
            raise KpipeError(f"{folder} is a portable {manifest.get('task')} export, not a {cls.task} one; "
                             f"{cls.command} answers with {cls.task} exports")
        return manifest

    @classmethod
    def open(cls, folder: str | Path):
        path = Path(folder)
        if not is_portable(path):
            raise KpipeError(f"{path} is not a portable export (no {MANIFEST_FILE} naming an onnx or litert "
                             "network); write one with `kpipe export MODEL --format onnx`")
        try:
            return cls(path)
        except (KeyError, FileNotFoundError, ValueError, TypeError) as error:  # written by another kpipe
            written = json.loads((path / MANIFEST_FILE).read_text(encoding="utf-8")).get("portable_kpipe_version",
                                                                                          "?")
            raise KpipeError(f"{path} was written by kpipe {written} and this kpipe cannot read it "
                             f"({type(error).__name__}: {error}); delete it and run `kpipe export` again") from None


class PortableClassifier(PortableExport):
    """A classifier's portable export: preprocessing and network (or an ensemble's, with their weights), label
    names and (several labels) thresholds."""

    task, command = "classify", "kpipe predict"

    def __init__(self, folder: Path):
        super().__init__(folder)
        spec = json.loads((folder / PREPROCESSING_FILE).read_text(encoding="utf-8"))
        fmt = self.manifest["format"]
        self.members = [member(folder, m, fmt) for m in (spec["members"] if spec["kind"] == "ensemble" else [spec])]
        self.label_names = (folder / LABELS_FILE).read_text(encoding="utf-8").splitlines()
        multi_label = self.manifest.get("multi_label")
        self.thresholds = np.asarray(multi_label["thresholds"], np.float32) if multi_label else None
        self.separator = multi_label["separator"] if multi_label else "|"

    def probabilities(self, texts: Sequence[str]) -> np.ndarray:
        """(batch, classes) probabilities (two columns for a binary sigmoid), or (batch, labels) with several
        labels per text; an ensemble's are its members' weighted average, as its SavedModel computes them."""
        return sum(m.weight * m.probabilities(texts) for m in self.members)

    def predict(self, texts: Sequence[str]) -> list[PortablePrediction]:
        rows = self.probabilities(list(texts))
        names = self.label_names
        if self.thresholds is not None:
            chosen = [tuple(n for n, on in zip(names, row >= self.thresholds) if on) for row in rows]
            return [PortablePrediction(text, self.separator.join(labels), float(row.max()),
                                       {n: float(p) for n, p in zip(names, row)}, labels)
                    for text, row, labels in zip(texts, rows, chosen)]
        return [PortablePrediction(text, names[int(row.argmax())], float(row.max()),
                                   {n: float(p) for n, p in zip(names, row)}) for text, row in zip(texts, rows)]

    def serving_outputs(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """The outputs the SavedModel's `serve` returns for `texts`, as arrays: probabilities, label (UTF-8
        bytes) and label_id; with several labels per text, probabilities, predicted (0/1 per label) and labels
        (the names over their thresholds, joined by the separator)."""
        rows = self.probabilities(list(texts)).astype(np.float32)
        names = np.array([n.encode("utf-8") for n in self.label_names], dtype=object)
        if self.thresholds is not None:
            predicted = rows >= self.thresholds
            joined = [self.separator.encode("utf-8").join(names[row]) for row in predicted]
            return {"probabilities": rows, "predicted": predicted.astype(np.int64),
                    "labels": np.array(joined, dtype=object)}
        label_id = rows.argmax(axis=1).astype(np.int64)
        return {"probabilities": rows, "label": names[label_id], "label_id": label_id}

    def predict_all(self, texts: Sequence[str], batch_size: int = 256,
                    on_batch: Callable[[int], object] | None = None) -> list[PortablePrediction]:
        """`predict` over any number of texts, `batch_size` at a time (bounded memory); `on_batch(rows)` after
        each batch (a progress bar)."""
        found = []
        for start in range(0, len(texts), batch_size):
            found += self.predict(texts[start:start + batch_size])
            if on_batch is not None:
                on_batch(len(texts[start:start + batch_size]))
        return found


class PortableForecaster(PortableExport):
    """A forecaster's portable export: raw windows (original units) in, the next `horizon` values and their
    conformal intervals out, as the SavedModel's `serve` computes them (scaling in NumPy around the network)."""

    task, command = "forecast", "kpipe forecast"

    def __init__(self, folder: Path):
        super().__init__(folder)
        self.spec = json.loads((folder / FEATURES_FILE).read_text(encoding="utf-8"))
        self.mean = np.asarray(self.spec["scaler_mean"], np.float32)
        self.scale = np.asarray(self.spec["scaler_scale"], np.float32)
        self.half_widths = {int(level): np.asarray(w, np.float32)
                            for level, w in self.spec.get("interval_half_widths", {}).items()}
        self.network = open_network(inside(folder, self.manifest["network_files"][0]), self.manifest["format"])

    def serve(self, window: np.ndarray) -> dict[str, np.ndarray]:
        """`window` (batch, window, features) in original units -> {"forecast", "lower_80", "upper_80", ...}, each
        (batch, horizon) in original units. Windows of another shape are a `KpipeError` (a 400 when served), as the
        SavedModel's input signature refuses them."""
        window = np.asarray(window, np.float32)
        expected = (self.spec["window"], len(self.spec["features"]))
        if window.shape == (0,):  # an empty list: no windows, as the SavedModel reads it
            window = window.reshape((0, *expected))
        if window.ndim != 3 or window.shape[1:] != expected:
            raise KpipeError(f"windows of shape {list(window.shape)}; this forecaster reads (batch, {expected[0]}, "
                             f"{expected[1]}): the last {expected[0]} steps of its {expected[1]} feature(s)")
        scaled = ((window - self.mean) / self.scale).astype(np.float32)
        forecast = np.asarray(self.network(scaled), np.float32) * self.scale[0] + self.mean[0]
        outputs = {"forecast": forecast}
        for level, width in self.half_widths.items():
            outputs[f"lower_{level}"], outputs[f"upper_{level}"] = forecast - width, forecast + width
        return outputs


class PortableWordVectors(PortableExport):
    """A word2vec export's vectors: words in, vectors out (zeros for a word outside the vocabulary), as the
    SavedModel's `embed` signature answers."""

    task, command = "word2vec", "kpipe serve"

    def __init__(self, folder: Path):
        super().__init__(folder)
        spec = json.loads((folder / PREPROCESSING_FILE).read_text(encoding="utf-8"))
        words = inside(folder, spec["words"]).read_text(encoding="utf-8").split("\n")[:-1]
        self.index = {word: i for i, word in enumerate(words)}
        self.network = open_network(inside(folder, spec["network"]), self.manifest["format"])
        self.dim = int(np.asarray(self.network(np.zeros(1, np.int32))).shape[-1])

    def embed(self, words: Sequence[str]) -> np.ndarray:
        """(len(words), dim) float32 vectors."""
        if not len(words):
            return np.zeros((0, self.dim), np.float32)
        ids = np.array([self.index.get(w, len(self.index)) for w in words], np.int32)
        return np.asarray(self.network(ids), np.float32)


def portable_kinds() -> dict[str, type]:
    """The class that answers with each task's portable exports, by task."""
    from kpipe.portable.generator import PortableGenerator  # (they build on this module)
    from kpipe.portable.language_model import PortableLanguageModel
    from kpipe.portable.reader import PortableReader
    from kpipe.portable.tagger import PortableTagger

    return {kind.task: kind for kind in (PortableClassifier, PortableForecaster, PortableWordVectors,
                                         PortableGenerator, PortableReader, PortableTagger, PortableLanguageModel)}


def open_portable(folder: str | Path) -> PortableExport:
    """The portable export in `folder`, as the class of the task it was exported from (a server's view)."""
    task = json.loads((Path(folder) / MANIFEST_FILE).read_text(encoding="utf-8")).get("task")
    kinds = portable_kinds()
    if task not in kinds:
        raise KpipeError(f"{folder} is a portable {task} export; only classifiers, forecasters, word vectors, "
                         "name generators, readers, taggers and language models are exported")
    return kinds[task].open(folder)
