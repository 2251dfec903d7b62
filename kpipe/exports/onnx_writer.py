"""A network written as ONNX (`kpipe export --format onnx`): through Keras' exporter (tf2onnx), or ONNX's own
LSTM/GRU operators for recurrent classifiers, and quantized by onnxruntime."""

from __future__ import annotations

import contextlib
import io
import logging
import warnings
from pathlib import Path

from kpipe.exports.onnx_recurrent import recurrent_onnx


def write_onnx(model, path: Path, quantize: str, spec: dict) -> None:
    """`model` written to `path` as ONNX, int8 weights with `quantize = "int8"`."""
    fused = recurrent_onnx(model) if spec["kind"] == "word_ids" else None
    if fused is not None:  # ONNX's own LSTM/GRU operators: one kernel per layer instead of a Loop
        import onnx

        onnx.save(fused, str(path))
    else:
        # tf2onnx logs its steps at INFO ("Computed 0 values for constant folding", ...) whatever `verbose` says, and
        # Keras' bridge to it warns of NumPy's np.object: a user of `kpipe export` reads neither
        with _quiet("tf2onnx"), warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            model.export(str(path), format="onnx", verbose=False)
    if quantize == "int8":
        quantize_onnx(path, weight_only=spec["kind"] in ("wordpiece", "reader"))


def quantize_onnx(path: Path, weight_only: bool) -> None:
    """Rewrite the ONNX network at `path` with int8 weights, per channel. onnxruntime's dynamic quantization also
    quantizes each matrix product's activations (uint8, per tensor, at run time): fine for recurrent and n-gram
    networks, but a transformer's feed-forward activations have outliers (97.7 % of a MiniLM's labels kept).
    So an encoder's products get int8 weights in blocks of 128 (`MatMulNBits`), each block of activations
    quantized on its own (99.7-100 % of a MiniLM's labels kept), and its embedding tables int8 rows."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    plain = path.with_suffix(".float.onnx")
    path.rename(plain)
    source = plain
    try:
        if weight_only:
            import onnx
            from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

            # accuracy_level 4: the products computed in int8, activations quantized per block of 128 at run time
            # (level 0 computes in float from dequantized weights: no faster than the float network here)
            quantizer = MatMulNBitsQuantizer(onnx.load(str(plain)), bits=8, block_size=128, is_symmetric=True,
                                             accuracy_level=4, op_types_to_quantize=("MatMul",))
            with _quiet("onnxruntime.quantization.matmul_nbits_quantizer"):
                quantizer.process()
            source = path.with_suffix(".weights.onnx")
            quantizer.model.save_model_to_file(str(source), False)
        # it prints the graph's shapes it infers, and logs each tensor it leaves in float through the root logger
        with contextlib.redirect_stdout(io.StringIO()), _quiet("", below=logging.ERROR):
            quantize_dynamic(str(source), str(path), weight_type=QuantType.QInt8, per_channel=True,
                             op_types_to_quantize=["Gather"] if weight_only else None)
    finally:
        for leftover in {plain, source}:
            leftover.unlink(missing_ok=True)


@contextlib.contextmanager
def _quiet(logger: str, below: int = logging.WARNING):
    """The named logger (and the loggers under it that set no level) silenced below `below` (onnxruntime's weight
    quantizer logs a line per node at INFO, tf2onnx each step of a conversion)."""
    found = logging.getLogger(logger)
    level = found.level
    found.setLevel(below)
    try:
        yield
    finally:
        found.setLevel(level)
