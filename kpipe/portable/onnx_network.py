"""An exported network in onnxruntime (whose `run` is thread-safe: no lock)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime

from kpipe.portable.network import Network, input_order

ONNX_TYPES = {"tensor(int32)": np.int32, "tensor(int64)": np.int64, "tensor(bool)": np.bool_,
              "tensor(float)": np.float32}


class OnnxNetwork(Network):
    fmt = "onnx"

    def __init__(self, path: Path):
        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3
        self.session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self.input_names = sorted((i.name for i in self.session.get_inputs()), key=input_order)

    def _run(self, *inputs) -> np.ndarray:
        if len(inputs) == 1 and isinstance(inputs[0], dict):  # a pretrained encoder's named inputs
            return self._named(inputs[0])
        return self.session.run(None, dict(zip(self.input_names, inputs)))[0]

    def _named(self, inputs: dict[str, np.ndarray]) -> np.ndarray:
        """Named inputs, each cast to the dtype the network declares for it (matched by name)."""
        found = {i.name: i.type for i in self.session.get_inputs()}
        feed = {}
        for name, kind in found.items():
            array = next(a for key, a in inputs.items() if key in name)
            feed[name] = array.astype(ONNX_TYPES[kind])
        return self.session.run(None, feed)[0]

    def outputs(self, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
        declared = [i.name for i in self.session.get_inputs()]
        return self.session.run(None, {name: inputs[name] for name in declared})

    def input_shapes(self) -> dict[str, tuple]:
        return {i.name: tuple(i.shape) for i in self.session.get_inputs()}
