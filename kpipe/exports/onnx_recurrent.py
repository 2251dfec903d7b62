"""A recurrent classifier (`build_rnn_classifier`) written as ONNX's own LSTM / GRU operators.

Keras' ONNX export turns a masked recurrent layer into an ONNX `Loop` over time steps, which onnxruntime runs one
step at a time through its sub-graph machinery (about 35 us a step and direction on these CPUs: 0.6 ms for one
tweet). ONNX's `LSTM` and `GRU` operators run the whole sequence in one fused kernel and take each row's length
(`sequence_lens`), which is what Keras' mask of right-padded ids means. So the graph here is: ids -> lengths (the
non-zero ids) and embeddings -> one LSTM/GRU node per layer (both directions in one node) -> the last states or
the masked max/mean over time -> the output layer. Pinned to the Keras model in
tests/unit/exports/test_onnx_recurrent.py.

Keras and ONNX order the gates differently: an LSTM's kernel holds [input, forget, cell, output] blocks, ONNX's
[input, output, forget, cell]; a GRU's are [update, reset, candidate] in both, and Keras' `reset_after` GRU is
ONNX's `linear_before_reset=1` with the input and recurrent biases side by side.
"""

from __future__ import annotations

import numpy as np

OPSET = 17
LSTM_GATES_TO_ONNX = (0, 3, 1, 2)  # Keras [i, f, c, o] blocks -> ONNX [i, o, f, c]


def recurrent_onnx(model):
    """The ONNX model of `model`, a recurrent classifier without dropout, or None when `model` is not the plain
    stack this writes (an embedding, LSTM/GRU layers with the default activations, optionally bidirectional with
    concatenated outputs, masked max/mean pooling or the last states, the output layer): Keras' own export then
    writes it."""
    import keras
    from onnx import TensorProto, helper, numpy_helper

    from kpipe.layers.masked_pooling import MaskedMaxPooling, MaskedMeanPooling

    graph = _Graph(helper, numpy_helper)
    layers = [layer for layer in model.layers if not isinstance(layer, (keras.layers.InputLayer, keras.layers.Dropout))]
    if not layers or not isinstance(layers[0], keras.layers.Embedding) or len(model.inputs) != 1:
        return None
    ids = "token_ids"
    graph.nodes.append(helper.make_node("Cast", [ids], ["ids64"], to=TensorProto.INT64))
    graph.nodes.append(helper.make_node("Not", [graph.op("Equal", "ids64", graph.constant(np.int64(0)))], ["mask"]))
    mask_float = graph.op("Cast", "mask", to=TensorProto.FLOAT)  # (batch, time)
    lengths = graph.op("Cast", graph.op("ReduceSum", mask_float, graph.constant(np.array([1], np.int64)),
                                        keepdims=0), to=TensorProto.INT32)
    # An empty text (every id padding) runs one step and its states are zeroed below, as Keras leaves them.
    safe_lengths = graph.op("Max", lengths, graph.constant(np.array([1], np.int32)))
    nonempty = graph.op("Unsqueeze", graph.op("Cast", graph.op("Greater", lengths, graph.constant(np.int32(0))),
                                              to=TensorProto.FLOAT), graph.constant(np.array([1], np.int64)))
    table = graph.constant(np.asarray(layers[0].embeddings, np.float32))
    x = graph.op("Transpose", graph.op("Gather", table, "ids64"), perm=[1, 0, 2])  # (time, batch, dim)
    states = None
    position = 1
    while position < len(layers) and _recurrent(layers[position]) is not None:
        directions, returns_sequences = _recurrent(layers[position])
        if directions is None:
            return None
        y, y_h = graph.recurrent(x, directions, safe_lengths)
        x = graph.op("Reshape", graph.op("Transpose", y, perm=[0, 2, 1, 3]), graph.constant(np.array([0, 0, -1])))
        states = graph.op("Reshape", graph.op("Transpose", y_h, perm=[1, 0, 2]), graph.constant(np.array([0, -1])))
        if not returns_sequences:
            position += 1
            break
        position += 1
    if states is None:
        return None
    pooled = []
    while position < len(layers) and isinstance(layers[position], (MaskedMaxPooling, MaskedMeanPooling)):
        sequence = graph.op("Transpose", x, perm=[1, 0, 2])  # (batch, time, features)
        pooled.append(graph.masked_max(sequence, "mask") if isinstance(layers[position], MaskedMaxPooling)
                      else graph.masked_mean(sequence, mask_float))
        position += 1
    if position < len(layers) and isinstance(layers[position], keras.layers.Concatenate) and len(pooled) == 2:
        features = graph.op("Concat", *pooled, axis=1)
        position += 1
    elif len(pooled) == 1:
        features = pooled[0]
    elif not pooled and not _recurrent(layers[position - 1])[1]:
        features = graph.op("Mul", states, nonempty)
    else:
        return None
    dense = layers[position] if position == len(layers) - 1 else None
    if not isinstance(dense, keras.layers.Dense) or dense.activation.__name__ not in ("softmax", "sigmoid"):
        return None
    logits = graph.op("Add", graph.op("MatMul", features, graph.constant(np.asarray(dense.kernel, np.float32))),
                      graph.constant(np.asarray(dense.bias, np.float32)))
    graph.nodes.append(helper.make_node("Softmax", [logits], ["probabilities"], axis=-1)
                       if dense.activation.__name__ == "softmax" else
                       helper.make_node("Sigmoid", [logits], ["probabilities"]))
    inputs = [helper.make_tensor_value_info(ids, TensorProto.INT32, ["batch", "time"])]
    outputs = [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, ["batch", dense.units])]
    onnx_graph = helper.make_graph(graph.nodes, "rnn_classifier", inputs, outputs, graph.initializers)
    return helper.make_model(onnx_graph, opset_imports=[helper.make_opsetid("", OPSET)],
                             producer_name="kpipe")


def _recurrent(layer):
    """(directions, returns sequences) of a recurrent layer: directions a list of (cell kind, Keras layer), None
    when the layer is recurrent but not what ONNX's operators compute; None for other layers."""
    import keras

    if isinstance(layer, keras.layers.Bidirectional):
        forward, backward = layer.forward_layer, layer.backward_layer
        if layer.merge_mode != "concat" or not all(_plain(cell) for cell in (forward, backward)):
            return None, False
        return [forward, backward], forward.return_sequences
    if isinstance(layer, (keras.layers.LSTM, keras.layers.GRU)):
        if not _plain(layer) or layer.go_backwards:
            return None, False
        return [layer], layer.return_sequences
    return None


def _plain(layer) -> bool:
    """Whether a Keras LSTM/GRU computes what ONNX's operator of the same name does (default activations, biases,
    a GRU resetting after the recurrent product, no state carried between calls)."""
    import keras

    cell = layer.cell
    if layer.stateful or not cell.use_bias or cell.activation.__name__ != "tanh" or (
            cell.recurrent_activation.__name__ != "sigmoid"):
        return False
    return isinstance(layer, keras.layers.LSTM) or (isinstance(layer, keras.layers.GRU) and cell.reset_after)


class _Graph:
    """The nodes and initializers of the graph being written, with unique names."""

    def __init__(self, helper, numpy_helper):
        self.helper, self.numpy_helper = helper, numpy_helper
        self.nodes, self.initializers, self.count = [], [], 0

    def name(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}_{self.count}"

    def constant(self, value) -> str:
        name = self.name("const")
        self.initializers.append(self.numpy_helper.from_array(np.asarray(value), name))
        return name

    def op(self, kind: str, *inputs: str, **attributes) -> str:
        output = self.name(kind.lower())
        self.nodes.append(self.helper.make_node(kind, list(inputs), [output], **attributes))
        return output

    def recurrent(self, x: str, directions: list, lengths: str) -> tuple[str, str]:
        """One LSTM/GRU node for the layer's directions: Y (time, directions, batch, units), Y_h."""
        import keras

        lstm = isinstance(directions[0], keras.layers.LSTM)
        units = directions[0].cell.units
        weights = [_onnx_weights(layer.cell, lstm) for layer in directions]
        w, r, b = (self.constant(np.stack([parts[i] for parts in weights])) for i in range(3))
        y, y_h = self.name("y"), self.name("y_h")
        extra = {} if lstm else {"linear_before_reset": 1}
        self.nodes.append(self.helper.make_node(
            "LSTM" if lstm else "GRU", [x, w, r, b, lengths], [y, y_h], hidden_size=units,
            direction="bidirectional" if len(directions) == 2 else "forward", **extra))
        return y, y_h

    def masked_mean(self, sequence: str, mask_float: str) -> str:
        """MaskedMeanPooling: the sum over unpadded steps over their count (at least 1)."""
        weights = self.op("Unsqueeze", mask_float, self.constant(np.array([2], np.int64)))
        axis = self.constant(np.array([1], np.int64))
        total = self.op("ReduceSum", self.op("Mul", sequence, weights), axis, keepdims=0)
        count = self.op("Max", self.op("ReduceSum", weights, axis, keepdims=0), self.constant(np.float32(1.0)))
        return self.op("Div", total, count)

    def masked_max(self, sequence: str, mask: str) -> str:
        """MaskedMaxPooling: the max over unpadded steps, 0 for an empty text."""
        keep = self.op("Unsqueeze", mask, self.constant(np.array([2], np.int64)))
        lowest = self.constant(np.float32(np.finfo(np.float32).min))
        pooled = self.op("ReduceMax", self.op("Where", keep, sequence, lowest), axes=[1], keepdims=0)
        any_kept = self.op("ReduceMax", self.op("Cast", keep, to=1), axes=[1], keepdims=0)  # 1: FLOAT
        return self.op("Mul", pooled, any_kept)


def _onnx_weights(cell, lstm: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A Keras cell's (W, R, B) in ONNX's layout: W (gates*units, inputs), R (gates*units, units), B the input and
    recurrent biases (2*gates*units)."""
    kernel, recurrent = np.asarray(cell.kernel, np.float32), np.asarray(cell.recurrent_kernel, np.float32)
    bias = np.asarray(cell.bias, np.float32)
    if lstm:
        def reorder(matrix):
            blocks = np.split(matrix, 4, axis=-1)
            return np.concatenate([blocks[i] for i in LSTM_GATES_TO_ONNX], axis=-1)
        return reorder(kernel).T, reorder(recurrent).T, np.concatenate([reorder(bias), np.zeros_like(bias)])
    return kernel.T, recurrent.T, bias.reshape(-1)  # GRU (reset_after): bias (2, 3*units) = input, recurrent
