"""Writing a SavedModel with named endpoints, and loading one (TensorFlow Text's ops registered first)."""

from __future__ import annotations

from pathlib import Path

from kpipe import dependencies
from kpipe.exports import manifest


def write_saved_model(path: Path, *, tracked: list, endpoints: dict) -> None:
    """Write a SavedModel at `path` holding `tracked` objects (models, layers, tf.Modules) and the
    given endpoints (name → tf.function with an input signature): what plain TF serving loads.

    Each endpoint is saved as the graph it has already traced (`get_concrete_function`), both as a signature and
    as an attribute (`tf.saved_model.load(path).serve(...)`). Saving a tf.function itself would trace it once more,
    inside the save (its cache keys differ there): seconds for each decoding graph of every export. The root holds
    what Keras' `ExportArchive` would: the layers' variable lists, every variable the endpoints read, and the lookup
    tables inside `tracked` (a checkpoint walk finds them, and traces nothing)."""
    import keras
    import tensorflow as tf

    functions = {name: function.get_concrete_function() for name, function in endpoints.items()}
    root = tf.__internal__.tracking.AutoTrackable()  # (a tf.Module's `variables` is a read-only property)
    layers = [item for item in tracked if isinstance(item, keras.layers.Layer)]
    for collection in ("variables", "trainable_variables", "non_trainable_variables"):
        setattr(root, collection, [v for layer in layers for v in getattr(layer, collection)])
    used = {id(v): v for function in functions.values() for v in function.variables}
    root.endpoint_variables = list(used.values())
    root.resources = _resources(tracked)
    for name, function in functions.items():
        setattr(root, name, function)
    signatures = dict(functions)
    signatures.setdefault("serving_default", next(iter(functions.values())))
    tf.saved_model.save(root, str(path), signatures=signatures)
    aliased = {} if "serving_default" in endpoints else {"serving_default_alias": next(iter(endpoints))}
    # the first endpoint is serving_default too (TF Serving needs one): the server shares its graph
    manifest.update(path, signatures={name: describe_signature(function) for name, function in endpoints.items()},
                    **aliased)


def _resources(tracked: list) -> list:
    """The TensorFlow resources (lookup tables) held anywhere inside the `tracked` objects, once each."""
    import tensorflow as tf

    found = {}
    for item in tracked:
        for node in [item, *tf.train.TrackableView(item).descendants()]:
            if isinstance(node, tf.saved_model.experimental.TrackableResource):
                found.setdefault(id(node), node)
    return list(found.values())


def describe_signature(function) -> dict:
    """Input names, dtypes and shapes, and output names, of a tf.function with an input signature."""
    inputs = {spec.name: {"dtype": spec.dtype.name, "shape": spec.shape.as_list()}
              for spec in function.input_signature}
    outputs = function.get_concrete_function().structured_outputs
    return {"inputs": inputs, "outputs": sorted(outputs) if isinstance(outputs, dict) else []}


def load_saved_model(path: Path):
    """`tf.saved_model.load`, with TensorFlow Text's ops registered first when it is installed:
    WordPiece tokenizers inside an export use them, and plain TensorFlow does not know them.

    Raises:
        MissingDependencyError: the export needs tensorflow-text and it is not installed.
    """
    import tensorflow as tf

    if dependencies.installed("tensorflow_text"):
        import tensorflow_text  # noqa: F401  (registers the ops)
        return tf.saved_model.load(str(path))
    try:
        return tf.saved_model.load(str(path))
    except (tf.errors.NotFoundError, RuntimeError) as error:  # "Op type not registered 'RegexSplitWithOffsets'"
        if "Op type not registered" not in str(error):
            raise
        dependencies.require_tensorflow_text(f"the export {path}")
        raise
