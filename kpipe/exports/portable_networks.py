"""The networks of `kpipe export` (`kpipe.exports.portable`): an export's Keras model made ready for a runtime
(dropout out, float32, an n-gram model on sparse inputs, word vectors as a lookup, a tagger's CRF written beside
it) and written as ONNX or LiteRT, quantized as asked."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from kpipe.portable.export_files import CONFIG_FILE, PROJECTOR_METADATA_FILE


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
        from kpipe.exports.onnx_writer import write_onnx

        write_onnx(model, path, quantize, spec)
    else:
        from kpipe.exports.litert_writer import write_litert

        write_litert(model, path, quantize, spec)
