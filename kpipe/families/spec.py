"""`FamilySpec`: what the rest of kpipe needs to know about a model family, declared once in the family's own
folder (`kpipe/families/<family>/__init__.py`) and listed, explicitly, by the task registry
(`kpipe.tasks.registry.TASKS`). Nothing here imports TensorFlow: the builder and the decoder are named as
"module:attribute" strings, imported only when a model is built."""

from __future__ import annotations

import dataclasses
import importlib
from typing import Any


def resolve(target: str) -> Any:
    """The object a "module:attribute" string names (imported now)."""
    module, attribute = target.split(":")
    return getattr(importlib.import_module(module), attribute)


@dataclasses.dataclass(frozen=True)
class FamilySpec:
    """One model family as a user picks it with `model.family`.

    Args:
        name: the value of `model.family`.
        config: its config dataclass (no TensorFlow).
        builder: "module:function" that turns the config into a `keras.Model` ("" for families that are not one
            Keras model, such as the ensemble).
        decoder: "module:attribute" of what generates from a trained model in the graph, for families of tasks that
            generate (the name generators' samplers, the translators' decoding parts); "" otherwise.
        portable: `kpipe export` writes it as ONNX and LiteRT.
        shards: trains on streamed shards (a glob or a folder of Parquet/CSV files) without loading them whole.
        ensemble_member: can be the sequence member of an ensemble (`model.sequence`).
        summary: one line: what the family is (the families table of the docs).
    """

    name: str
    config: type
    builder: str
    summary: str
    decoder: str = ""
    portable: bool = False
    shards: bool = False
    ensemble_member: bool = False

    def build(self, model_config, *args, **kwargs):
        """The family's Keras model (imports TensorFlow)."""
        return resolve(self.builder)(model_config, *args, **kwargs)

    def decoding(self) -> Any:
        """The family's in-graph decoder class (imports TensorFlow)."""
        if not self.decoder:
            raise TypeError(f"model family {self.name} has no decoder")
        return resolve(self.decoder)
