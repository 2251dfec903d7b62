"""Answering with a portable export (`kpipe export`): raw strings in, labels and probabilities out, through
onnxruntime or ai-edge-litert and the NumPy preprocessing of `kpipe.portable.text`. Imports neither TensorFlow nor
Keras: a service needs numpy, onnxruntime or ai-edge-litert, and this package.

    from kpipe.portable.runtime import PortableClassifier
    classifier = PortableClassifier.open("saved_models/sentiment-bilstm/1-onnx")
    classifier.predict(["great crew, thanks!"])[0].label
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from pathlib import Path
from typing import Sequence

import numpy as np

from kpipe.errors import KpipeError, MissingDependencyError
from kpipe.portable.text import NgramCounts, WordIds
from kpipe.portable.wordpiece import WordPieceIds

ONNX_TYPES = {"tensor(int32)": np.int32, "tensor(int64)": np.int64, "tensor(bool)": np.bool_,
              "tensor(float)": np.float32}
RUNTIMES = {"onnx": ("onnxruntime", "pip install onnxruntime"),
            "litert": ("ai_edge_litert", "pip install ai-edge-litert")}


def is_portable(folder: str | Path) -> bool:
    """Whether `folder` holds a portable export (read from its manifest, without loading anything)."""
    path = Path(folder) / "kpipe.json"
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


class Network:
    """The exported network in its runtime: `__call__(inputs (batch, ...)) -> (batch, outputs)` float32."""

    def __init__(self, path: Path, fmt: str):
        module, install = RUNTIMES[fmt]
        self.fmt = fmt
        try:
            if fmt == "onnx":
                import onnxruntime

                options = onnxruntime.SessionOptions()
                options.log_severity_level = 3
                self.session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
                self.input_names = sorted((i.name for i in self.session.get_inputs()), key=_input_order)
            else:
                from ai_edge_litert.interpreter import Interpreter, OpResolverType

                self.interpreter = Interpreter(model_path=str(path))
                if any(-1 in d["shape_signature"] for d in self.interpreter.get_input_details()):
                    # inputs resized per text (n-grams): the XNNPack delegate cannot reshape these graphs
                    self.interpreter = Interpreter(
                        model_path=str(path),
                        experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
                self.interpreter.allocate_tensors()
                self.output_index = self.interpreter.get_output_details()[0]["index"]
        except ImportError:
            raise MissingDependencyError(f"{path} runs with {module}, which is not installed; {install}") from None

    def __call__(self, *inputs) -> np.ndarray:
        """The network on `inputs` (one array, the n-gram ids and values, or one dict of named arrays), batch
        first."""
        if len(inputs) == 1 and isinstance(inputs[0], dict):  # a pretrained encoder's named inputs
            return self._named(inputs[0])
        if self.fmt == "onnx":
            return self.session.run(None, dict(zip(self.input_names, inputs)))[0]
        rows = []
        for i in range(len(inputs[0])):  # LiteRT's recurrent loop converts with static shapes: one text per call
            details, rows_i = self._inputs(), [array[i:i + 1] for array in inputs]
            if any(tuple(d["shape"]) != row.shape for d, row in zip(details, rows_i)):  # n-grams: another length
                for detail, row in zip(details, rows_i):
                    self.interpreter.resize_tensor_input(detail["index"], row.shape)
                self.interpreter.allocate_tensors()
                details = self._inputs()
            for detail, row in zip(details, rows_i):
                self.interpreter.set_tensor(detail["index"], row)
            self.interpreter.invoke()
            rows.append(self.interpreter.get_tensor(self.output_index)[0].copy())
        return np.stack(rows) if rows else np.zeros((0, 0), np.float32)

    def _named(self, inputs: dict[str, np.ndarray]) -> np.ndarray:
        """Named inputs, each cast to the dtype the network declares for it (matched by name)."""
        if self.fmt == "onnx":
            found = {i.name: i.type for i in self.session.get_inputs()}
            feed = {}
            for name, kind in found.items():
                array = next(a for key, a in inputs.items() if key in name)
                feed[name] = array.astype(ONNX_TYPES[kind])
            return self.session.run(None, feed)[0]
        details = self.interpreter.get_input_details()
        rows = []
        for i in range(len(next(iter(inputs.values())))):
            for detail in details:
                array = next(a for key, a in inputs.items() if key in detail["name"])
                self.interpreter.set_tensor(detail["index"], array[i:i + 1].astype(detail["dtype"]))
            self.interpreter.invoke()
            rows.append(self.interpreter.get_tensor(self.output_index)[0].copy())
        return np.stack(rows) if rows else np.zeros((0, 0), np.float32)

    def _inputs(self) -> list[dict]:
        """The input details in the order the exporter declared them (ids before values)."""
        return sorted(self.interpreter.get_input_details(), key=lambda d: _input_order(d["name"]))


@contextlib.contextmanager
def _written_by_this_kpipe(folder: Path):
    """A folder whose files this kpipe cannot read (another version wrote it): one line naming the fix."""
    try:
        yield
    except (KeyError, FileNotFoundError, ValueError, TypeError) as error:
        written = json.loads((folder / "kpipe.json").read_text(encoding="utf-8")).get("portable_kpipe_version", "?")
        raise KpipeError(f"{folder} was written by kpipe {written} and this kpipe cannot read it ({type(error).__name__}"
                         f": {error}); delete it and run `kpipe export` again") from None


def _require_task(folder: Path, manifest: dict, task: str, command: str) -> None:
    if manifest.get("task") != task:
        raise KpipeError(f"{folder} is a portable {manifest.get('task')} export, not a {task} one; {command} "
                         f"answers with {task} exports")


def _input_order(name: str) -> tuple:
    """The networks' inputs in the order the runtime passes them: token ids, or n-gram ids then their values
    (the converters name and order inputs their own way)."""
    return "values" in name, name


@dataclasses.dataclass
class Member:
    """One network of a portable classifier: its preprocessing, the network, and its weight in the average."""

    preprocess: WordIds | NgramCounts | WordPieceIds
    network: Network
    weight: float
    fixed_length: int  # LiteRT's recurrent networks take ids padded to this length; 0: the batch's longest

    def probabilities(self, texts: Sequence[str]) -> np.ndarray:
        if isinstance(self.preprocess, WordPieceIds):
            inputs = (self.preprocess(texts, self.fixed_length or None),)  # a dict, fed by name
        elif isinstance(self.preprocess, WordIds):
            inputs = (self.preprocess(texts, self.fixed_length or None),)
        else:
            inputs = self.preprocess.sparse(texts)
        output = np.asarray(self.network(*inputs), np.float32)
        return np.concatenate([1.0 - output, output], axis=1) if output.shape[1] == 1 else output


def member(folder: Path, spec: dict, fmt: str) -> Member:
    vocabulary = (folder / spec["vocabulary"]).read_text(encoding="utf-8").split("\n")[:-1]
    if spec["kind"] == "wordpiece":
        settings = json.loads((folder / spec["wordpiece"]).read_text(encoding="utf-8"))
        preprocess = WordPieceIds(vocabulary, settings)
    elif spec["kind"] == "word_ids":
        preprocess = WordIds(vocabulary, standardize=spec["standardize"], split=spec["split"],
                             sequence_length=spec["sequence_length"], truncating=spec["truncating"])
    else:
        preprocess = NgramCounts(vocabulary, np.load(folder / spec["idf"]), standardize=spec["standardize"],
                                 split=spec["split"], ngrams=spec["ngrams"], char_ngrams=spec["char_ngrams"],
                                 weighting=spec["weighting"])
    fixed = spec["sequence_length"] if spec["kind"] in ("word_ids", "wordpiece") and fmt == "litert" else 0
    return Member(preprocess, Network(folder / spec["network"], fmt), float(spec.get("weight", 1.0)), fixed)


class PortableClassifier:
    """A classifier's portable export: preprocessing and network (or an ensemble's, with their weights), label
    names and (several labels) thresholds."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.manifest = json.loads((folder / "kpipe.json").read_text(encoding="utf-8"))
        _require_task(folder, self.manifest, "classify", "kpipe predict")
        spec = json.loads((folder / "preprocessing.json").read_text(encoding="utf-8"))
        fmt = self.manifest["format"]
        self.members = [member(folder, m, fmt) for m in (spec["members"] if spec["kind"] == "ensemble" else [spec])]
        self.label_names = (folder / "labels.txt").read_text(encoding="utf-8").splitlines()
        multi_label = self.manifest.get("multi_label")
        self.thresholds = np.asarray(multi_label["thresholds"], np.float32) if multi_label else None
        self.separator = multi_label["separator"] if multi_label else "|"

    @classmethod
    def open(cls, folder: str | Path) -> "PortableClassifier":
        path = Path(folder)
        if not is_portable(path):
            raise KpipeError(f"{path} is not a portable export (no kpipe.json naming an onnx or litert network); "
                             "write one with `kpipe export MODEL --format onnx`")
        with _written_by_this_kpipe(path):
            return cls(path)

    def probabilities(self, texts: Sequence[str]) -> np.ndarray:
        """(batch, classes) probabilities (two columns for a binary sigmoid), or (batch, labels) with several
        labels per text; an ensemble's are its members' weighted average, as its SavedModel computes them."""
        return sum(m.weight * m.probabilities(texts) for m in self.members)

    def predict(self, texts: Sequence[str]) -> list[PortablePrediction]:
        rows = self.probabilities(list(texts))
        names = self.label_names
        if self.thresholds is not None:
            return [PortablePrediction(text, self.separator.join(n for n, on in zip(names, row >= self.thresholds)
                                                                 if on), float(row.max()),
                                       {n: float(p) for n, p in zip(names, row)},
                                       tuple(n for n, on in zip(names, row >= self.thresholds) if on))
                    for text, row in zip(texts, rows)]
        return [PortablePrediction(text, names[int(row.argmax())], float(row.max()),
                                   {n: float(p) for n, p in zip(names, row)}) for text, row in zip(texts, rows)]


class PortableForecaster:
    """A forecaster's portable export: raw windows (original units) in, the next `horizon` values and their
    conformal intervals out, as the SavedModel's `serve` computes them (scaling in NumPy around the network)."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.manifest = json.loads((folder / "kpipe.json").read_text(encoding="utf-8"))
        _require_task(folder, self.manifest, "forecast", "kpipe forecast")
        self.spec = json.loads((folder / "features.json").read_text(encoding="utf-8"))
        self.mean = np.asarray(self.spec["scaler_mean"], np.float32)
        self.scale = np.asarray(self.spec["scaler_scale"], np.float32)
        self.half_widths = {int(level): np.asarray(w, np.float32)
                            for level, w in self.spec.get("interval_half_widths", {}).items()}
        self.network = Network(folder / self.manifest["network_files"][0], self.manifest["format"])

    @classmethod
    def open(cls, folder: str | Path) -> "PortableForecaster":
        path = Path(folder)
        if not is_portable(path):
            raise KpipeError(f"{path} is not a portable export; write one with `kpipe export MODEL --format onnx`")
        with _written_by_this_kpipe(path):
            return cls(path)

    def serve(self, window: np.ndarray) -> dict[str, np.ndarray]:
        """`window` (batch, window, features) in original units -> {"forecast", "lower_80", "upper_80", ...}, each
        (batch, horizon) in original units."""
        scaled = ((np.asarray(window, np.float32) - self.mean) / self.scale).astype(np.float32)
        forecast = np.asarray(self.network(scaled), np.float32) * self.scale[0] + self.mean[0]
        outputs = {"forecast": forecast}
        for level, width in self.half_widths.items():
            outputs[f"lower_{level}"], outputs[f"upper_{level}"] = forecast - width, forecast + width
        return outputs
