"""`kpipe export`: a classifier, forecaster, word2vec, name-generator or reader export rewritten to run without TensorFlow,
as ONNX or LiteRT.

The network takes numbers (token ids, sparse n-gram features, windows; a generator's characters) and becomes
`model.onnx` (Keras' ONNX export, dynamic batch and length; recurrent classifiers as ONNX's fused LSTM/GRU
operators, `onnx_recurrent`) or `model.tflite` (LiteRT builtin ops only, so the standalone `ai-edge-litert` runs
it: one text per call, resized to its length, except recurrent networks: ids padded to the full sequence length,
because a masked recurrent loop converts only with static shapes; an RNN generator's one-step network takes any
batch). The text preprocessing it needs is written beside it as data (`preprocessing.json`, the vocabulary, the
n-gram idf) for `kpipe.portable.text`. Quantization: "int8" stores int8 weights (per channel for
ONNX; no calibration set needed; see `quantize_onnx` for which activations onnxruntime quantizes too), "float16"
halves the weights (LiteRT only).

The folder sits beside the SavedModel version it came from (`saved_models/NAME/1-onnx`, `1-litert-int8`) and
is written like every export: into a temporary folder, fsynced, renamed into place.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import logging
import shutil
import tomllib
from pathlib import Path

import numpy as np

from kpipe.atomic import fsync_tree, publish_folder
from kpipe.errors import KpipeError
from kpipe.exports import manifest
from kpipe.exports.onnx_recurrent import recurrent_onnx
from kpipe.portable.runtime import PREPROCESSING_FILE
from kpipe.portable.generator import GENERATOR_FILE
from kpipe.tasks.registry import TASKS
from kpipe.exports.versions import tmp_name, resolve_model_dir

log = logging.getLogger(__name__)

QUANTIZATIONS = {"onnx": ("none", "int8"), "litert": ("none", "float16", "int8")}
MODEL_FILES = {"onnx": "model.onnx", "litert": "model.tflite"}
def portable_name(version: str, fmt: str, quantize: str) -> str:
    return f"{version}-{fmt}" + ("" if quantize == "none" else f"-{quantize}")


@dataclasses.dataclass(frozen=True)
class PortablePlan:
    """What `kpipe export` will write, every check done (without TensorFlow)."""

    source: Path
    target: Path
    fmt: str
    quantize: str
    spec: dict
    manifest: dict


def export_portable(model: str | Path, fmt: str, quantize: str = "none",
                    export_dir: str | Path = "saved_models") -> Path:
    """Write the portable export of a classifier export (a version folder, a folder of versions: the latest, or a
    pipeline name) and return its folder (see `plan_portable` for what it refuses)."""
    return write_portable(plan_portable(model, fmt, quantize, export_dir))


def plan_portable(model: str | Path, fmt: str, quantize: str = "none",
                  export_dir: str | Path = "saved_models") -> PortablePlan:
    """Check that `model` can be exported as `fmt` with `quantize`, before TensorFlow loads.

    Raises:
        KpipeError: an unknown format or a quantization the format's runtime cannot run, a task or family that does
            not export (names what does), an export without what the runtime needs, or a target that exists.
    """
    if fmt not in QUANTIZATIONS:
        raise KpipeError(f"unknown format '{fmt}'; use onnx or litert")
    if quantize not in QUANTIZATIONS[fmt]:
        raise KpipeError(f"--quantize {quantize} is not available for {fmt} (kpipe writes float16 networks for "
                         f"litert only); use one of: {', '.join(QUANTIZATIONS[fmt])}")
    source = resolve_model_dir(model, export_dir)
    found = manifest.read(source)
    spec = TASKS.get(found.get("task"))
    if spec is None or found.get("family") not in spec.models or not spec.family(found.get("family")).portable:
        exported = [f"{task.name}: {', '.join(f.name for f in task.families if f.portable)}" for task in TASKS.values()
                    if any(f.portable for f in task.families)]
        raise KpipeError(f"{source} is a {found.get('task')} export of family {found.get('family')}, which kpipe "
                         f"export does not write yet; it writes ONNX and LiteRT for {'; '.join(exported)}")
    config = tomllib.loads((source / "config.toml").read_text(encoding="utf-8"))
    if config.get("data", {}).get("text_pair_column", ""):
        raise KpipeError(f"{source} classifies pairs of texts; kpipe export handles single texts only")
    target = source.parent / portable_name(source.name, fmt, quantize)
    if target.exists():
        raise KpipeError(f"{target} exists already; delete it to export again (exports are never overwritten)")
    return PortablePlan(source, target, fmt, quantize, preprocessing_spec(source, config, fmt), found)


def write_portable(plan: PortablePlan) -> Path:
    """Write `plan`'s folder: into a temporary folder, flushed, then renamed into place."""
    source, target, fmt, quantize, spec, found = (plan.source, plan.target, plan.fmt, plan.quantize, plan.spec,
                                                  plan.manifest)
    members = spec["members"] if spec["kind"] == "ensemble" else [spec]
    network_files = [name for m in members for name in (m["network"], m.get("start")) if name]
    tmp = source.parent / tmp_name()
    tmp.mkdir()
    try:
        for member in members:
            write_network(source / member["keras"], tmp / member["network"], fmt, quantize, member)
            for name in (member.get("vocabulary"), member.get("idf"), member.get("wordpiece"), member.get("generator"),
                         member.get("reader")):
                if name:
                    shutil.copy2(source / name, tmp / name)
        for name in ("labels.txt", "multi_label.json", "features.json"):
            if (source / name).exists():
                shutil.copy2(source / name, tmp / name)
        (tmp / PREPROCESSING_FILE).write_text(json.dumps(spec, indent=2) + "\n", encoding="utf-8")
        (tmp / manifest.MANIFEST_FILE).write_text(json.dumps(
            {**found, "format": fmt, "quantization": quantize, "source_version": source.name,
             "network_files": network_files, "portable_kpipe_version": manifest.kpipe_version()},
            indent=2, sort_keys=True) + "\n", encoding="utf-8")
        fsync_tree(tmp)
        publish_folder(tmp, target)  # a second `kpipe export` of this version at once: one line, not a traceback
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    size = sum((target / name).stat().st_size for name in network_files)
    log.info("Wrote %s (%s, quantization %s, %.1f KiB of network)", target, fmt, quantize, size / 1024)
    return target


def preprocessing_spec(source: Path, config: dict, fmt: str) -> dict:
    """What the runtime needs for each network: the Keras file it comes from, the file it becomes, and how
    `kpipe.portable.text` turns raw strings into its inputs (or, for a forecaster, where its scaling is). An
    ensemble lists its members with their weights (chosen on validation, from the export's metrics.json)."""
    pre, model = config["preprocessing"], config["model"]
    if config.get("task") == "generate":
        common = {"generator": GENERATOR_FILE, "keras": "model.keras", "network": MODEL_FILES[fmt],
                  "sequence_length": pre["max_length"] + 1}
        if model["family"] == "char_rnn":  # one step of the cells per call (kpipe.families.char_rnn.step_network)
            start = f"start_{MODEL_FILES[fmt]}" if model.get("conditioning") == "initial_state" else ""
            return {"kind": "char_steps", **common, "start": start}
        return {"kind": "chars", **common}  # the transformer: START, the prefix and the characters so far -> logits
    if config.get("task") == "answer":  # the encoder; windows, offsets and decoding in NumPy (kpipe.portable.reader)
        return {"kind": "reader", "keras": "model.keras", "network": MODEL_FILES[fmt], "vocabulary": "vocabulary.txt",
                "wordpiece": "wordpiece.json", "reader": "reader.json", "sequence_length": pre["sequence_length"]}
    if config.get("task") == "word2vec":  # words looked up in the vocabulary, the vectors' rows gathered
        return {"kind": "word_lookup", "words": "words.txt", "keras": "model.keras", "network": MODEL_FILES[fmt]}
    if model["family"] == "rnn_forecaster":  # raw windows: scaled, forecast and unscaled by the runtime
        features = json.loads((source / "features.json").read_text(encoding="utf-8"))
        return {"kind": "windows", "window": features["window"], "num_features": len(features["features"]),
                "features": "features.json", "keras": "model.keras", "network": MODEL_FILES[fmt]}
    if model["family"] != "ensemble":
        return member_spec(source, pre, model, "", fmt)
    if model.get("sequence_members", 1) != 1:
        raise KpipeError(f"{source} is an ensemble of several sequence members, of which the export keeps one Keras "
                         "model; kpipe export handles ensembles with one sequence member")
    report = json.loads((source / "metrics.json").read_text(encoding="utf-8"))["ensemble"]
    ngram, recurrent = report["ngram_weight"], report.get("recurrent_weight", 0.0)
    members = [{**member_spec(source, pre, model["ngrams"], "ngrams", fmt), "weight": ngram}]
    if model.get("recurrent"):
        members.append({**member_spec(source, model.get("recurrent_preprocessing") or pre, model["recurrent"],
                                      "recurrent", fmt), "weight": recurrent})
    members.append({**member_spec(source, pre, model["sequence"], "", fmt), "weight": 1.0 - ngram - recurrent})
    return {"kind": "ensemble", "members": members}


def member_spec(source: Path, pre: dict, model: dict, role: str, fmt: str) -> dict:
    """One classifier network's spec; `role` names an ensemble member's files ("ngrams" -> ngrams_model.keras)."""
    prefix = f"{role}_" if role else ""
    family = model.get("family", "rnn_classifier")
    if family == "pretrained_classifier" or (family == "transformer_classifier" and pre.get("tokenizer") == "wordpiece"):
        if not (source / f"{prefix}wordpiece.json").exists():
            raise KpipeError(f"{source} has no {prefix}wordpiece.json: its encoder's tokenizer is not WordPiece (BPE "
                             "and SentencePiece are not exported yet), or an older kpipe exported it; run the "
                             "pipeline again with this kpipe")
        return {"kind": "wordpiece", "keras": f"{prefix}model.keras", "network": f"{prefix}{MODEL_FILES[fmt]}",
                "vocabulary": f"{prefix}vocabulary.txt", "wordpiece": f"{prefix}wordpiece.json",
                "sequence_length": pre["sequence_length"]}
    if pre.get("tokenizer", "words") != "words":
        raise KpipeError(f"{source} uses the {pre['tokenizer']} tokenizer; kpipe export handles word vocabularies")
    files = {"keras": f"{prefix}model.keras", "network": f"{prefix}{MODEL_FILES[fmt]}",
             "vocabulary": f"{prefix}vocabulary.txt"}
    common = {"standardize": pre["standardize"], "split": pre["split"], **files}
    if family in ("rnn_classifier", "transformer_classifier"):  # ids of whole words
        return {"kind": "word_ids", **common, "sequence_length": pre["sequence_length"],
                "truncating": pre["truncating"]}
    if model.get("hashing"):
        raise KpipeError(f"{source} hashes its n-grams (model.hashing=true), which the portable preprocessing does not "
                         "reproduce; train with model.hashing=false to export it as ONNX or LiteRT")
    if not (source / f"{prefix}idf.npy").exists():
        raise KpipeError(f"{source} was exported by an older kpipe without its n-gram idf ({prefix}idf.npy); run the "
                         "pipeline again to export it")
    return {"kind": "ngram_counts", **common, "ngrams": model["ngrams"], "char_ngrams": model["char_ngrams"],
            "weighting": "binary" if model["weighting"] == "nb" else model["weighting"], "idf": f"{prefix}idf.npy"}


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
    model = keras.Model.from_config(_without_dropout(trained.get_config()))
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
        with contextlib.redirect_stdout(io.StringIO()):  # it prints the graph's shapes it infers
            quantize_dynamic(str(source), str(path), weight_type=QuantType.QInt8, per_channel=True,
                             op_types_to_quantize=["Gather"] if weight_only else None)
    finally:
        for leftover in {plain, source}:
            leftover.unlink(missing_ok=True)


@contextlib.contextmanager
def _quiet(logger: str):
    """The named logger silenced (onnxruntime's weight quantizer logs a line per node at INFO)."""
    found = logging.getLogger(logger)
    level = found.level
    found.setLevel(logging.WARNING)
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
    if spec["kind"] == "word_lookup":
        (path.parent / spec["words"]).write_text(  # the vectors' words in row order, from metadata.tsv
            "".join(line.split("\t")[0] + "\n" for line in
                    (keras_file.parent / "metadata.tsv").read_text(encoding="utf-8").splitlines()[1:]),
            encoding="utf-8")
    model = word_vectors_network(keras_file) if spec["kind"] == "word_lookup" else network(keras_file)
    write_keras_network(model, path, fmt, quantize, spec)


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
    elif spec["kind"] == "char_steps":  # a generator's step or start: any batch, outputs in the model's order
        named = model.input if isinstance(model.input, dict) else {"category": model.input}
        signature = [tf.TensorSpec([None, *tensor.shape[1:]], tf.as_dtype(str(tensor.dtype)), name=name)
                     for name, tensor in named.items()]

        def listed(*tensors):
            found = model(dict(zip(named, tensors)) if len(named) > 1 else tensors[0], training=False)
            return tuple(found) if isinstance(found, (list, tuple)) else (found,)
        function = tf.function(listed, input_signature=signature)
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
