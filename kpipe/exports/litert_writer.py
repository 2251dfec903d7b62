"""A network written as LiteRT (`kpipe export --format litert`): a concrete function per input kind (static shapes
where a masked recurrent loop converts only so), its variables frozen, TensorFlow Lite's builtin ops only."""

from __future__ import annotations

from pathlib import Path


def write_litert(model, path: Path, quantize: str, spec: dict) -> None:
    """`model` written to `path` as LiteRT, int8 (dynamic range) or float16 weights as `quantize` asks."""
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
