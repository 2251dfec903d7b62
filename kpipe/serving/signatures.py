"""A loaded signature: its named inputs and outputs, and how a call is made.

Requests to one signature may share a call (micro-batching) only when that cannot change any
request's answer: every input and output is batch-major, and every input's and output's shape past
the batch axis is fixed (requests whose inner lengths differ could not even be concatenated). A
translation's attention weights are padded to the longest word in the call, so the translate
signature runs each request alone; a classifier's probabilities do not depend on the other texts
in the batch, so its requests are gathered.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import tensorflow as tf


@dataclass(frozen=True)
class TensorInfo:
    name: str
    dtype: tf.DType
    shape: tuple  # None for an unknown dimension

    @property
    def rank(self) -> int:
        return len(self.shape)

    def describe(self) -> str:
        dims = ", ".join("None" if d is None else str(d) for d in self.shape)
        return f"{self.name}: {self.dtype.name}[{dims}]"


def _info(name: str, spec) -> TensorInfo:
    return TensorInfo(name, spec.dtype, tuple(spec.shape.as_list()) if spec.shape.rank is not None else ())


@dataclass
class Signature:
    name: str
    function: object  # a ConcreteFunction from tf.saved_model.load(...).signatures
    inputs: dict[str, TensorInfo]
    outputs: dict[str, TensorInfo]

    @classmethod
    def of(cls, name: str, function) -> Signature:
        _, kwargs = function.structured_input_signature
        outputs = function.structured_outputs
        return cls(name, function, {key: _info(key, spec) for key, spec in sorted(kwargs.items())},
                   {key: _info(key, tensor) for key, tensor in sorted(outputs.items())})

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
            self({name: (np.full((rows, *info.shape[1:]), b"", dtype=object) if info.dtype == tf.string else
                         np.zeros((rows, *info.shape[1:]), info.dtype.as_numpy_dtype))
                  for name, info in self.inputs.items()})
            if rows >= max_rows:
                break
            rows = min(rows * 2, max_rows)

    def __call__(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        tensors = {key: tf.constant(value, dtype=self.inputs[key].dtype) for key, value in inputs.items()}
        return {key: value.numpy() for key, value in self.function(**tensors).items()}
