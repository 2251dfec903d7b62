"""Which dtype policy a run trains in: the config's choice, with "auto" resolved for this machine.

"auto" is mixed_bfloat16 on a CPU that reports bfloat16 units (AVX-512 BF16 or AMX on Linux) when TensorFlow
sees no GPU, and float32 everywhere else. Measured (benchmarks/pretrained_precision.py and
pretrained_throughput.py, all-MiniLM-L6-v2 fine-tuning): 1.37x the float32 training steps on an Intel CPU with
AMX, 1.50x on an AMD EPYC with AVX-512 BF16, the same validation accuracy within a run's noise; CPUs without
those units emulate bfloat16 and run it slower, so they keep float32. On GPUs pick mixed_float16 yourself.
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import keras
import tensorflow as tf

BFLOAT16_CPU_FLAGS = ("avx512_bf16", "amx_bf16")


def cpu_has_bfloat16_units(cpuinfo: Path = Path("/proc/cpuinfo")) -> bool:
    """True when the CPU flags (Linux /proc/cpuinfo) list AVX-512 BF16 or AMX-BF16."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        text = cpuinfo.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    flags = {flag for line in text.splitlines() if line.startswith("flags") for flag in line.split(":", 1)[-1].split()}
    return any(flag in flags for flag in BFLOAT16_CPU_FLAGS)


def resolve_precision(precision: str) -> str:
    """The dtype policy for `precision` on this machine ("auto" resolved, see the module)."""
    if precision != "auto":
        return precision
    if not tf.config.list_logical_devices("GPU") and cpu_has_bfloat16_units():
        return "mixed_bfloat16"
    return "float32"


def in_float32(model: keras.Model, build) -> keras.Model:
    """`model` itself when it computes in float32; else a float32 copy of it, built by `build()` under the float32
    policy with `model`'s weights (a mixed policy keeps its variables in float32: copied exactly). For evaluating
    and exporting a model trained in bfloat16: the SavedModel then computes what its float32 ONNX and LiteRT
    exports compute, and a near-tie between two answers resolves the same way in all three."""
    if model.compute_dtype == "float32":
        return model
    with precision_scope("float32"):
        copy = build()
    copy.set_weights(model.get_weights())
    return copy


@contextlib.contextmanager
def precision_scope(precision: str):
    """Layers built inside take this (resolved) dtype policy; output layers pin float32 themselves."""
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(resolve_precision(precision))
    try:
        yield
    finally:
        keras.config.set_dtype_policy(previous)
