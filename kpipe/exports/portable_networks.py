"""The networks of `kpipe export` (`kpipe.exports.portable`): an export's Keras model made ready for a runtime
(dropout out, float32, an n-gram model on sparse inputs, word vectors as a lookup, a tagger's CRF written beside
it) and written as ONNX or LiteRT, quantized as asked."""

from __future__ import annotations

import contextlib
import io
import logging
from pathlib import Path

import numpy as np

from kpipe.portable.export_files import CONFIG_FILE, PROJECTOR_METADATA_FILE
from kpipe.exports.onnx_recurrent import recurrent_onnx


def word_vectors_network(keras_file: Path):
    """A word2vec export's vectors as a network: word ids (batch,) -> vectors (batch, dim), the id one past the
    vocabulary giving zeros (a word outside it), as the SavedModel's `embed`."""
    import keras

    import kpipe.families.word2vec.model  # noqa: F401  (registers the loss saved in model.keras)

    table = np.asarray(keras.saving.load_model(keras_file, compile=False).get_layer("word_vectors").embeddings)
    ids = keras.Input((), dtype="int32", name="word_ids")
    lookup = keras.layers.Embedding(len(table) + 1, table.shape[1], name="vectors")
    model = keras.Model(ids, lookup(ids), name="word_vectors")
    lookup.set_weights([np.vstack([table, np.zeros((1, table.shape[1]), np.float32)])])
    model(np.zeros((1,), "int32"))  # Keras exports only built models
    return model


def network(keras_file: Path):
    """The export's Keras model for inference: dropout removed (it does nothing at inference, but its random
    state is a variable the converters cannot freeze), a dense input for n-gram models (they read sparse
    features in training), called once (Keras exports only built models)."""
    import keras

    from kpipe.exports.open import load_keras_model_file

    trained = load_keras_model_file(keras_file.parent, keras_file.name)
    if getattr(trained.inputs[0], "sparse", False):
        model = sparse_ngram_network(trained)
        model([np.zeros((1, 1), "int32"), np.zeros((1, 1), "float32")])
        return model
    model = type(trained).from_config(_without_dropout(trained.get_config()))  # a keras-hub task too
    model.set_weights(trained.get_weights())
    model(keras.tree.map_structure(lambda spec: np.zeros([1] + [d or 1 for d in spec.shape[1:]], str(spec.dtype)),
                                   model.input))
    return model


def sparse_ngram_network(trained):
    """An n-gram model rewritten on sparse inputs the runtimes take: (ids (batch, k) int32, values (batch, k)
    float32) of each text's non-zero features, 0-padded. Its first linear map x @ W + b becomes the sum over the
    non-zeros of value * W[id] (an embedding lookup), with the naive-Bayes ratios folded into W; the rest of the
    model (ReLU hidden layer, output layer) follows unchanged. The same numbers as the dense product, without a
    (batch, features) input: 200,000 floats per text for IMDB's n-grams."""
    import keras

    names = {layer.name: layer for layer in trained.layers}
    first = names.get("hidden") or names.get("nb_linear") or names["probabilities"]
    kernel, bias = np.asarray(first.kernel), np.asarray(first.bias)  # by name: get_weights' order varies
    if first.name == "nb_linear":
        kernel = kernel * np.asarray(first.ratios)
    if "nb_scale" in names:
        kernel = kernel * np.asarray(names["nb_scale"].scale)[:, None]
    ids = keras.Input(shape=(None,), dtype="int32", name="ngram_ids")
    values = keras.Input(shape=(None,), dtype="float32", name="ngram_values")
    lookup = keras.layers.Embedding(kernel.shape[0], kernel.shape[1], name="first_linear")
    x = keras.ops.sum(lookup(ids) * keras.ops.expand_dims(values, -1), axis=1) + bias
    output = None
    if first.name == "hidden":
        output = keras.layers.Dense(names["probabilities"].units, activation=names["probabilities"].activation,
                                    name="probabilities")
        x = output(keras.ops.relu(x))
    else:
        x = keras.layers.Activation(names["probabilities"].activation, name="probabilities")(x)
    model = keras.Model([ids, values], x, name="bag_of_ngrams_sparse")
    lookup.set_weights([kernel])
    if output is not None:
        output.set_weights([np.asarray(names["probabilities"].kernel), np.asarray(names["probabilities"].bias)])
    return model


def _without_dropout(config):
    """A Keras config for inference: every dropout rate 0, and float32 where a layer computed in mixed precision
    (its weights are float32 already; the runtimes have no bfloat16 kernels for these graphs)."""
    if isinstance(config, dict):
        if config.get("class_name") == "DTypePolicy" and str(config.get("config", {}).get("name", "")).startswith(
                "mixed_"):
            return {**config, "config": {**config["config"], "name": "float32"}}
        return {k: (0.0 if k in ("dropout", "recurrent_dropout", "rate") and isinstance(v, float) else
                    "float32" if k == "dtype" and isinstance(v, str) and v.startswith("mixed_") else
                    _without_dropout(v)) for k, v in config.items()}
    if isinstance(config, list):
        return [_without_dropout(v) for v in config]
    return config


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
    """The named logger silenced below `below` (onnxruntime's weight quantizer logs a line per node at INFO)."""
    found = logging.getLogger(logger)
    level = found.level
    found.setLevel(below)
    try:
        yield
    finally:
        found.setLevel(level)


def write_network(keras_file: Path, path: Path, fmt: str, quantize: str, spec: dict) -> None:
    if spec["kind"] == "char_steps":
        from kpipe.families.char_rnn.step_network import start_network, step_network

        trained = network(keras_file)
        if spec["start"]:
            write_keras_network(start_network(trained), path.parent / spec["start"], fmt, quantize, spec)
        write_keras_network(step_network(trained), path, fmt, quantize, spec)
        return
    if spec["kind"] == "lm_steps":
        write_keras_network(language_model_step(keras_file), path, fmt, quantize, spec)
        return
    if spec["kind"] == "word_lookup":
        (path.parent / spec["words"]).write_text(  # the vectors' words in row order, from metadata.tsv
            "".join(line.split("\t")[0] + "\n" for line in
                    (keras_file.parent / PROJECTOR_METADATA_FILE).read_text(encoding="utf-8").splitlines()[1:]),
            encoding="utf-8")
    model = word_vectors_network(keras_file) if spec["kind"] == "word_lookup" else network(keras_file)
    if spec.get("crf"):  # the chain's scores, for the NumPy Viterbi (the network returns the emissions)
        chain = model.get_layer("crf")
        np.savez(path.parent / spec["crf"], transitions=np.asarray(chain.transitions), start=np.asarray(chain.start),
                 end=np.asarray(chain.end))
    write_keras_network(model, path, fmt, quantize, spec)


def language_model_step(keras_file: Path):
    """A language model export's one-step network (`kpipe.families.lm_step_network`), built on its family's
    decoder with the export's config."""
    import dataclasses
    import json
    import tomllib

    from kpipe.families.lm_step_network import step_network
    from kpipe.portable.export_files import LM_SETTINGS_FILE
    from kpipe.tasks.registry import family_spec, parse_pipeline_config

    folder = keras_file.parent
    config = parse_pipeline_config(tomllib.loads((folder / CONFIG_FILE).read_text(encoding="utf-8")))
    settings = json.loads((folder / LM_SETTINGS_FILE).read_text(encoding="utf-8"))
    model_config = dataclasses.replace(config.model, vocabulary_size=settings["vocabulary_size"])
    trained = network(keras_file)
    decoder = family_spec("lm", model_config.family).decoding()(trained, model_config)
    return step_network(trained, decoder, settings["sequence_length"])


def write_keras_network(model, path: Path, fmt: str, quantize: str, spec: dict) -> None:
    """`model` written to `path` as `fmt`, quantized as `quantize`, its inputs as `spec`'s kind needs them."""
    if fmt == "onnx":
        fused = recurrent_onnx(model) if spec["kind"] == "word_ids" else None
        if fused is not None:  # ONNX's own LSTM/GRU operators: one kernel per layer instead of a Loop
            import onnx

            onnx.save(fused, str(path))
        else:
            model.export(str(path), format="onnx", verbose=False)
        if quantize == "int8":
            quantize_onnx(path, weight_only=spec["kind"] in ("wordpiece", "reader"))
        return
    import tensorflow as tf
    from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

    if spec["kind"] == "word_ids":  # a masked recurrent loop converts with static shapes only
        function = tf.function(lambda x: model(x, training=False),
                               input_signature=[tf.TensorSpec([1, spec["sequence_length"]], tf.int32)])
    elif spec["kind"] in ("wordpiece", "reader"):  # an encoder: inputs by name, any length (the runtime resizes them)
        named = model.input if isinstance(model.input, dict) else {"token_ids": model.input}
        signature = {name: tf.TensorSpec([1, None], tf.as_dtype(str(tensor.dtype)), name=name)
                     for name, tensor in named.items()}
        if isinstance(model.input, dict):
            function = tf.function(lambda inputs: model(inputs, training=False), input_signature=[signature])
        else:  # kpipe's transformer: token ids alone
            function = tf.function(lambda ids: model(ids, training=False), input_signature=[signature["token_ids"]])
    elif spec["kind"] == "chars":  # a generator: one name per call, padded (a masked recurrent loop converts only so)
        function = tf.function(lambda chars, category: model([chars, category], training=False), input_signature=[
            tf.TensorSpec([1, spec["sequence_length"]], tf.int32, name="chars"),
            tf.TensorSpec([1], tf.int32, name="category")])
    elif spec["kind"] in ("char_steps", "lm_steps"):  # a step (or start): any batch, outputs in the model's order
        named = model.input if isinstance(model.input, dict) else {"category": model.input}
        signature = [tf.TensorSpec([None, *tensor.shape[1:]], tf.as_dtype(str(tensor.dtype)), name=name)
                     for name, tensor in named.items()]

        def listed(*tensors):
            found = model(dict(zip(named, tensors)) if len(named) > 1 else tensors[0], training=False)
            return tuple(found) if isinstance(found, (list, tuple)) else (found,)
        function = tf.function(listed, input_signature=signature)
    elif spec["kind"] == "tagger":  # one sentence per call, padded (a masked recurrent loop converts only so)
        named = model.input
        sizes = {"words": [1, spec["max_words"]], "chars": [1, spec["max_words"], spec["max_word_length"]],
                 "casing": [1, spec["max_words"]]}
        signature = [tf.TensorSpec(sizes[name], tf.int32, name=name) for name in named]
        function = tf.function(lambda *tensors: model(dict(zip(named, tensors)), training=False),
                               input_signature=signature)
    elif spec["kind"] == "word_lookup":  # one word per call
        function = tf.function(lambda ids: model(ids, training=False),
                               input_signature=[tf.TensorSpec([1], tf.int32)])
    elif spec["kind"] == "windows":  # so does the forecaster's
        function = tf.function(lambda x: model(x, training=False), input_signature=[
            tf.TensorSpec([1, spec["window"], spec["num_features"]], tf.float32)])
    else:  # a lookup and a sum: any number of n-grams (the runtime resizes the input when a text has more)
        function = tf.function(lambda ids, values: model([ids, values], training=False),
                               input_signature=[tf.TensorSpec([1, None], tf.int32),
                                                tf.TensorSpec([1, None], tf.float32)])
    converter = tf.lite.TFLiteConverter.from_concrete_functions(
        [convert_variables_to_constants_v2(function.get_concrete_function())])
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]  # what ai-edge-litert runs alone
    if quantize in ("int8", "float16"):
        converter.optimizations = [tf.lite.Optimize.DEFAULT]  # int8 weights: dynamic range
    if quantize == "float16":
        converter.target_spec.supported_types = [tf.float16]
    path.write_bytes(converter.convert())
