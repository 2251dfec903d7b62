"""A loaded signature: its named inputs and outputs, and how a call is made.

A signature is a SavedModel's (a TensorFlow ConcreteFunction, `saved_model_signature`) or a portable export's
(ONNX or LiteRT behind `kpipe.portable.runtime`, `portable_signatures`); the server sees only this class, so
serving a portable export never imports TensorFlow. Dtypes are NumPy's (object for strings).

Requests to one signature may share a call (micro-batching) only when that cannot change any
request's answer: every input and output is batch-major, and every input's and output's shape past
the batch axis is fixed (requests whose inner lengths differ could not even be concatenated). A
translation's attention weights are padded to the longest word in the call, so the translate
signature runs each request alone; a classifier's probabilities do not depend on the other texts
in the batch, so its requests are gathered.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from kpipe.serving.repository import first_line

STRING = np.dtype(object)
# TF Serving's names of the dtypes (GET .../metadata), by NumPy's
TF_SERVING_DTYPES = {"object": "DT_STRING", "float32": "DT_FLOAT", "float64": "DT_DOUBLE", "float16": "DT_HALF",
                     "bfloat16": "DT_BFLOAT16", "int8": "DT_INT8", "int16": "DT_INT16", "int32": "DT_INT32",
                     "int64": "DT_INT64", "uint8": "DT_UINT8", "uint16": "DT_UINT16", "uint32": "DT_UINT32",
                     "uint64": "DT_UINT64", "complex64": "DT_COMPLEX64", "complex128": "DT_COMPLEX128",
                     "bool": "DT_BOOL"}


class InputRejected(Exception):
    """The model refused an input its graph cannot take (a shape, a value): HTTP 400 with the model's reason."""


@dataclass(frozen=True)
class TensorInfo:
    name: str
    dtype: np.dtype  # object for strings
    shape: tuple  # None for an unknown dimension

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def is_string(self) -> bool:
        return self.dtype == STRING

    @property
    def kind(self) -> str:
        """NumPy's kind of the dtype (f, i, u, b, c, O), bfloat16 counted as the float it is (ml_dtypes says V)."""
        return "f" if self.dtype.name == "bfloat16" else self.dtype.kind

    @property
    def dtype_name(self) -> str:
        return "string" if self.is_string else self.dtype.name

    def describe(self) -> str:
        dims = ", ".join("None" if d is None else str(d) for d in self.shape)
        return f"{self.name}: {self.dtype_name}[{dims}]"


@dataclass
class Signature:
    name: str
    call: Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]]  # arrays in, arrays out; InputRejected
    inputs: dict[str, TensorInfo]
    outputs: dict[str, TensorInfo]

    @property
    def batched(self) -> bool:
        """Every input has a leading batch axis (else a request is one call, e.g. `generate`'s scalars)."""
        return bool(self.inputs) and all(t.rank >= 1 and t.shape[0] is None for t in self.inputs.values())

    @property
    def gatherable(self) -> bool:
        """Requests can share one call without changing any answer (see the module docstring)."""
        return self.batched and all(t.rank >= 1 and t.shape[0] is None and None not in t.shape[1:]
                                    for t in [*self.inputs.values(), *self.outputs.values()])

    def warm_up(self, max_rows: int) -> None:
        """Call once with batches of 1, 2, 4, ... `max_rows` rows of empty strings or zeros, so the first
        requests do not pay for tracing or XLA compilation (a compiled classifier compiles once per
        power-of-two batch size). Only for signatures that micro-batching gathers."""
        if not self.gatherable:
            return
        rows = 1
        while True:
            self({name: (np.full((rows, *info.shape[1:]), b"", dtype=object) if info.is_string else
                         np.zeros((rows, *info.shape[1:]), info.dtype))
                  for name, info in self.inputs.items()})
            if rows >= max_rows:
                break
            rows = min(rows * 2, max_rows)

    def __call__(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return self.call(inputs)


def saved_model_signature(name: str, function) -> Signature:
    """The signature of a ConcreteFunction from `tf.saved_model.load(...).signatures`."""
    import tensorflow as tf

    def info(key: str, spec) -> TensorInfo:
        dtype = STRING if spec.dtype == tf.string else np.dtype(spec.dtype.as_numpy_dtype)
        return TensorInfo(key, dtype, tuple(spec.shape.as_list()) if spec.shape.rank is not None else ())

    _, kwargs = function.structured_input_signature
    dtypes = {key: spec.dtype for key, spec in kwargs.items()}

    def call(inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        tensors = {key: tf.constant(value, dtype=dtypes[key]) for key, value in inputs.items()}
        try:
            outputs = function(**tensors)
        except tf.errors.InvalidArgumentError as failure:
            raise InputRejected(_graph_error(failure.message)) from None
        return {key: value.numpy() for key, value in outputs.items()}

    return Signature(name, call, {key: info(key, spec) for key, spec in sorted(kwargs.items())},
                     {key: info(key, tensor) for key, tensor in sorted(function.structured_outputs.items())})


def portable_signatures(export) -> dict[str, Signature]:
    """The signatures a portable export (`kpipe.portable.runtime.PortableExport.open`) answers with: the same
    names, inputs and outputs as the SavedModel it was exported from, computed by onnxruntime or LiteRT."""
    if export.task == "forecast":
        window = export.spec["window"], len(export.spec["features"])
        outputs = ["forecast", *(f"{side}_{level}" for level in export.half_widths for side in ("lower", "upper"))]
        serve = Signature("serve", _rejecting(lambda inputs: export.serve(inputs["window"])),
                          {"window": TensorInfo("window", np.dtype(np.float32), (None, *window))},
                          {name: TensorInfo(name, np.dtype(np.float32), (None, export.spec["horizon"]))
                           for name in sorted(outputs)})
        return {"serving_default": serve, "serve": serve}
    if export.task == "word2vec":
        embed = Signature("embed", _rejecting(lambda inputs: {"vectors": export.embed(
            [w.decode("utf-8", "replace") for w in inputs["words"]])}),
                          {"words": TensorInfo("words", STRING, (None,))},
                          {"vectors": TensorInfo("vectors", np.dtype(np.float32), (None, export.dim))})
        return {"serving_default": embed, "embed": embed}
    if export.task == "generate":
        return {"serving_default": (generate := _portable_generate(export)), "generate": generate}
    if export.task == "answer":
        answer = Signature("serving_default", _rejecting(lambda inputs: export.answer(_strings(inputs["question"]),
                                                                                      _strings(inputs["context"]))),
                           {name: TensorInfo(name, STRING, (None,)) for name in ("context", "question")},
                           {"answer": TensorInfo("answer", STRING, (None,)),
                            "end": TensorInfo("end", np.dtype(np.int32), (None,)),
                            "score": TensorInfo("score", np.dtype(np.float32), (None,)),
                            "start": TensorInfo("start", np.dtype(np.int32), (None,))})
        return {"serving_default": answer}
    if export.task == "tag":
        return _portable_tag(export)
    if export.task == "lm":
        return _portable_lm(export)
    labels = len(export.label_names)  # (`kpipe export` writes no pair classifiers)

    def classify(inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return export.serving_outputs([t.decode("utf-8", "replace") for t in inputs["text"]])

    probabilities = TensorInfo("probabilities", np.dtype(np.float32), (None, labels))
    if export.thresholds is not None:
        outputs = [probabilities, TensorInfo("predicted", np.dtype(np.int64), (None, labels)),
                   TensorInfo("labels", STRING, (None,))]
    else:
        outputs = [probabilities, TensorInfo("label", STRING, (None,)),
                   TensorInfo("label_id", np.dtype(np.int64), (None,))]
    serve = Signature("serve", _rejecting(classify), {"text": TensorInfo("text", STRING, (None,))},
                      {o.name: o for o in sorted(outputs, key=lambda o: o.name)})
    return {"serving_default": serve, "serve": serve}


def _portable_lm(export) -> dict[str, Signature]:
    """A language model's `serving_default` (prompts -> greedy continuations) and `generate` (with the sampler's
    settings as scalars); a refused setting is a 400 naming it."""
    def scalar(inputs, name):
        return np.asarray(inputs[name]).item()

    serve = Signature("serving_default", _rejecting(lambda inputs: export.generate(_strings(inputs["prompt"]))),
                      {"prompt": TensorInfo("prompt", STRING, (None,))},
                      {"text": TensorInfo("text", STRING, (None,))})
    generate = Signature("generate", _rejecting(lambda inputs: export.generate(
        _strings(inputs["prompt"]), int(scalar(inputs, "max_new_tokens")), float(scalar(inputs, "temperature")),
        int(scalar(inputs, "top_k")), float(scalar(inputs, "top_p")), int(scalar(inputs, "seed")))),
                         {"max_new_tokens": TensorInfo("max_new_tokens", np.dtype(np.int32), ()),
                          "prompt": TensorInfo("prompt", STRING, (None,)),
                          "seed": TensorInfo("seed", np.dtype(np.int32), ()),
                          "temperature": TensorInfo("temperature", np.dtype(np.float32), ()),
                          "top_k": TensorInfo("top_k", np.dtype(np.int32), ()),
                          "top_p": TensorInfo("top_p", np.dtype(np.float32), ())},
                         {"text": TensorInfo("text", STRING, (None,))})
    return {"serving_default": serve, "generate": generate}


def _portable_tag(export) -> dict[str, Signature]:
    """A tagger's `serving_default` (raw texts -> words, tags, entities) and `tag_tokens` (words -> tags)."""
    matrix = lambda name, dtype: TensorInfo(name, np.dtype(dtype), (None, None))  # noqa: E731
    strings = lambda name: TensorInfo(name, STRING, (None, None))  # noqa: E731
    serve = Signature("serving_default", _rejecting(lambda inputs: export.serve(_strings(inputs["text"]))),
                      {"text": TensorInfo("text", STRING, (None,))},
                      {info.name: info for info in sorted(
                          [strings("entity_labels"), strings("entity_texts"), strings("tags"), strings("words"),
                           matrix("entity_starts", np.int32), matrix("entity_ends", np.int32),
                           matrix("entity_scores", np.float32)], key=lambda info: info.name)})
    tag_tokens = Signature("tag_tokens", _rejecting(lambda inputs: export.tag_tokens(inputs["tokens"])),
                           {"tokens": strings("tokens")},
                           {"scores": matrix("scores", np.float32), "tags": strings("tags")})
    return {"serving_default": serve, "tag_tokens": tag_tokens}


def _portable_generate(export) -> Signature:
    """A name generator's `generate`: scalars in (as the SavedModel's signature takes them), `count` names out;
    a refused argument (an unknown category, ...) is a 400 naming it."""
    from kpipe.errors import KpipeError

    def text(value) -> str:
        return value.item().decode("utf-8", "replace") if isinstance(value.item(), bytes) else str(value.item())

    def generate(inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        try:
            names = export.generate(text(inputs["prefix"]), int(inputs["count"]), float(inputs["temperature"]),
                                    text(inputs["category"]), int(inputs["top_k"]), int(inputs["seed"]))
        except KpipeError as refused:
            raise InputRejected(str(refused)) from None
        return {"names": np.array([n.encode("utf-8") for n in names], dtype=object)}

    scalars = {"prefix": STRING, "count": np.dtype(np.int32), "temperature": np.dtype(np.float32),
               "category": STRING, "top_k": np.dtype(np.int32), "seed": np.dtype(np.int32)}
    return Signature("generate", _rejecting(generate), {n: TensorInfo(n, d, ()) for n, d in sorted(scalars.items())},
                     {"names": TensorInfo("names", STRING, (None,))})


def _strings(values) -> list[str]:
    """A string input's values as text (the server passes UTF-8 bytes; a direct caller may pass str)."""
    return [v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v) for v in values]


def _rejecting(call: Callable) -> Callable:
    """`call`, with the runtime's refusal of an input (onnxruntime, LiteRT: a ValueError or RuntimeError
    subclass) or kpipe's (a KpipeError: a sentence too long for a LiteRT tagger) raised as InputRejected."""
    from kpipe.errors import KpipeError

    def guarded(inputs):
        try:
            return call(inputs)
        except (ValueError, RuntimeError, KpipeError) as failure:
            raise InputRejected(str(failure).strip().splitlines()[-1] if str(failure).strip()
                                else type(failure).__name__) from None
    return guarded


def _graph_error(message: str) -> str:
    """The line of a TensorFlow graph error that says what went wrong (its first lines say where)."""
    lines = [line.strip() for line in message.splitlines() if line.strip() and not line.startswith(("\t", " ")) and
             not line.startswith(("Graph execution error", "Detected at node", "<stack traces"))]
    return lines[-1] if lines else first_line(message)
