"""Exports that run without TensorFlow: the network as ONNX or LiteRT, the text preprocessing it needs as data
(`preprocessing.json`), re-implemented once in NumPy (`text.py`) and run by `runtime.py` with onnxruntime or
ai-edge-litert. Nothing in this package imports TensorFlow or Keras (tested in a process where importing them
fails); `kpipe.exports.portable` writes these exports and does import them."""
