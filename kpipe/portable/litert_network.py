"""An exported network in LiteRT's interpreter: one text per call (recurrent networks convert with static shapes
only; the others are resized to each text's length), under a lock."""

from __future__ import annotations

import re
import threading
from pathlib import Path

import numpy as np
from ai_edge_litert.interpreter import Interpreter, OpResolverType

from kpipe.portable.network import Network, input_order


class LiteRTNetwork(Network):
    fmt = "litert"

    def __init__(self, path: Path, xnnpack_resizes: bool = True, threads: int | None = None):
        # A LiteRT interpreter must be used by one thread at a time (its docstring): a server answers from several,
        # and without the lock one client's rows are set while another's are invoked (swapped answers), or a
        # resize frees buffers a running kernel reads.
        self.lock = threading.Lock()
        self.interpreter = Interpreter(model_path=str(path), num_threads=threads)
        signatures = [d["shape_signature"] for d in self.interpreter.get_input_details()]
        if any(-1 in s for s in signatures) and not xnnpack_resizes:
            # inputs resized per text (n-grams): the XNNPack delegate cannot reshape these graphs
            self.interpreter = Interpreter(
                model_path=str(path), num_threads=threads,
                experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
        if signatures and len(signatures[0]) == 2 and -1 not in signatures[0]:
            self.fixed_length = int(signatures[0][1])
        self.interpreter.allocate_tensors()
        self.output_index = self.interpreter.get_output_details()[0]["index"]

    def _run(self, *inputs) -> np.ndarray:
        if len(inputs) == 1 and isinstance(inputs[0], dict):  # a pretrained encoder's named inputs
            return self._named(inputs[0])

        def set_row(i: int) -> None:  # under self.lock (`_each_row`)
            details, rows_i = self._inputs(), [array[i:i + 1] for array in inputs]
            if any(tuple(d["shape"]) != row.shape for d, row in zip(details, rows_i)):  # n-grams: another length
                for detail, row in zip(details, rows_i):
                    self.interpreter.resize_tensor_input(detail["index"], row.shape)
                self.interpreter.allocate_tensors()
                details = self._inputs()
            for detail, row in zip(details, rows_i):
                self.interpreter.set_tensor(detail["index"], row)
        return self._each_row(len(inputs[0]), set_row)

    def _named(self, inputs: dict[str, np.ndarray]) -> np.ndarray:
        """Named inputs, each cast to the dtype the network declares for it (matched by name)."""
        def set_row(i: int) -> None:  # under self.lock (`_each_row`)
            details = self.interpreter.get_input_details()
            rows = [next(a for key, a in inputs.items() if key in d["name"])[i:i + 1] for d in details]
            if any(tuple(d["shape"]) != row.shape for d, row in zip(details, rows)):  # another length
                for detail, row in zip(details, rows):
                    self.interpreter.resize_tensor_input(detail["index"], row.shape)
                self.interpreter.allocate_tensors()
                details = self.interpreter.get_input_details()
            for detail, row in zip(details, rows):
                self.interpreter.set_tensor(detail["index"], row.astype(detail["dtype"]))
        return self._each_row(len(next(iter(inputs.values()))), set_row)

    def outputs(self, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
        with self.lock:
            details = self.interpreter.get_input_details()
            if any(tuple(d["shape"]) != inputs[_declared(d["name"], inputs)].shape for d in details):
                for detail in details:
                    self.interpreter.resize_tensor_input(detail["index"],
                                                         inputs[_declared(detail["name"], inputs)].shape)
                self.interpreter.allocate_tensors()
            for detail in self.interpreter.get_input_details():
                self.interpreter.set_tensor(detail["index"], inputs[_declared(detail["name"], inputs)])
            self.interpreter.invoke()
            # the converter names a function's outputs Identity, Identity_1, ... in their order
            ordered = sorted(self.interpreter.get_output_details(), key=lambda d: int(
                re.search(r"_(\d+)$", d["name"]).group(1)) if re.search(r"_\d+$", d["name"]) else 0)
            return [self.interpreter.get_tensor(d["index"]).copy() for d in ordered]

    def input_shapes(self) -> dict[str, tuple]:
        return {d["name"]: tuple(d["shape_signature"]) for d in self.interpreter.get_input_details()}

    def _each_row(self, count: int, set_row) -> np.ndarray:
        rows = []
        with self.lock:  # the whole batch: set, invoke and read each row with no other thread in between
            for i in range(count):
                set_row(i)
                self.interpreter.invoke()
                rows.append(self.interpreter.get_tensor(self.output_index)[0].copy())
        return np.stack(rows) if rows else np.zeros((0, 0), np.float32)

    def _inputs(self) -> list[dict]:
        """The input details in the order the exporter declared them (ids before values)."""
        return sorted(self.interpreter.get_input_details(), key=lambda d: input_order(d["name"]))


def _declared(name: str, inputs: dict) -> str:
    """The key of `inputs` a LiteRT input named `name` takes (the converter may prefix the names)."""
    return name if name in inputs else next(key for key in inputs if name.endswith(key) or f"_{key}:" in name)
