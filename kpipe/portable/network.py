"""An exported network in its runtime, one module per runtime (`onnx_network.py`, `litert_network.py`); this one
holds what they share and `open_network`, which picks one by format."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from kpipe.errors import MissingDependencyError

RUNTIMES = {"onnx": ("onnxruntime", "pip install onnxruntime"),
            "litert": ("ai_edge_litert", "pip install ai-edge-litert")}


class Network:
    """The exported network in its runtime: `__call__(inputs (batch, ...)) -> (batch, outputs)` float32."""

    fmt = ""
    fixed_length = 0  # LiteRT networks converted with static shapes take ids padded to this length

    def __call__(self, *inputs) -> np.ndarray:
        """The network on `inputs` (one array, the n-gram ids and values, or one dict of named arrays), batch
        first. A batch of no rows never reaches the runtime (onnxruntime's recurrent kernels crash the whole
        process on one: a client's empty list would take a server down): one row of ones stands in, and its
        answer cut to none has the shape an answer of no rows has."""
        named = len(inputs) == 1 and isinstance(inputs[0], dict)
        arrays = [np.asarray(a) for a in (inputs[0].values() if named else inputs)]
        if len(arrays[0]) == 0:
            ones = [np.ones([1, *(d or 1 for d in a.shape[1:])], a.dtype) for a in arrays]
            return self._run(*([dict(zip(inputs[0], ones))] if named else ones))[:0]
        return self._run(*inputs)

    def _run(self, *inputs) -> np.ndarray:
        """`__call__` on a batch of at least one row, in the runtime."""
        raise NotImplementedError

    def outputs(self, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
        """Every output of a network of any batch size (a generator's step), in the order its model listed them,
        for the inputs it declares (matched by name; the others are left out: a converter drops unused inputs)."""
        raise NotImplementedError

    def input_shapes(self) -> dict[str, tuple]:
        """The network's inputs by name (as its runtime names them), with their declared shapes."""
        raise NotImplementedError


def open_network(path: Path, fmt: str, xnnpack_resizes: bool = True, threads: int | None = None) -> Network:
    """The network at `path` in the runtime of `fmt` ("onnx" or "litert"). `xnnpack_resizes`: whether LiteRT's
    default (XNNPack) delegate can run this network when its inputs are resized per call (an encoder's can; the
    n-gram lookup's cannot). `threads`: LiteRT's threads for one call (None: its default; more helps an encoder,
    8.4 -> 7.5 ms for a MiniLM on 2 cores, and slows a small BiLSTM, 0.33 -> 0.73 ms)."""
    module, install = RUNTIMES[fmt]
    try:
        if fmt == "onnx":
            from kpipe.portable.onnx_network import OnnxNetwork

            return OnnxNetwork(path)
        from kpipe.portable.litert_network import LiteRTNetwork

        return LiteRTNetwork(path, xnnpack_resizes=xnnpack_resizes, threads=threads)
    except ImportError:
        raise MissingDependencyError(f"{path} runs with {module}, which is not installed; {install}") from None


def input_order(name: str) -> tuple:
    """The networks' inputs in the order the runtime passes them: token ids, or n-gram ids then their values
    (the converters name and order inputs their own way)."""
    return "values" in name, name
