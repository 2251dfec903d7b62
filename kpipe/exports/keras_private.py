"""The private Keras API kpipe relies on, in one place, each with why; `tests/unit/exports/test_keras_private.py`
checks that each still does what kpipe needs, so a Keras release that changes one fails there, by name. It lives in
exports, the lower of the two layers that use it (training resumes and builds with it, exports load with it).

- `Model._initial_epoch`: `fit` starts at it when set (Keras' own BackupAndRestore sets it); kpipe's exact
  resume (`kpipe.training.resume`) sets it from a checkpoint in `on_train_begin`.
- `Model._symbolic_build`: builds the optimizer's and the compiled metrics' variables from a dataset's element
  spec; Keras calls it only under a distribution strategy, kpipe calls it before every `fit` so the train step
  is traced once, not twice (tensorflow#48851).
- `keras.src.saving.serialization_lib.record_object_after_serialization`: switched off while a model file loads
  (`no_sharing_of_copies`), see there.
"""

from __future__ import annotations

import contextlib
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported by modules that load no Keras until they need it
    import keras


def set_resume_epoch(model: keras.Model, epoch: int | None) -> None:
    """Make the next `fit` (or `multi_worker.fit`) start at `epoch` (None: at its `initial_epoch`)."""
    model._initial_epoch = epoch


def resume_epoch(model: keras.Model) -> int | None:
    """The epoch `set_resume_epoch` set, if any."""
    return getattr(model, "_initial_epoch", None)


def build_training_state(model: keras.Model, element_spec) -> bool:
    """Build the optimizer's and metrics' variables from `element_spec` without reading data; whether it could."""
    if not hasattr(model, "_symbolic_build"):
        return False
    model._symbolic_build(data_batch=element_spec)
    return True


_SHARING_LOCK = threading.Lock()  # one load at a time swaps Keras' recorder


@contextlib.contextmanager
def no_sharing_of_copies():
    """Keras loads inside a scope that maps `id(object)` to objects it has seen, so that a layer shared in the
    saved model is one object again. But `Bidirectional.__init__` serializes its layer (twice) to copy it, and
    inside the scope that records the layer's id, and the backward copy under it; the layer is then freed, and a
    later object given the same id (the next LSTM of the same load, e.g. rnn_tagger's word BiLSTM after the
    character BiLSTM its custom layer builds) is "found" to be that backward copy, and the load fails ("Forward
    layer and backward layer should have different `go_backwards` value"), depending on where CPython reuses
    memory. Sharing read from the saved file needs only the deserializing half, so the recording of copies is
    switched off while loading."""
    from keras.src.saving import serialization_lib

    with _SHARING_LOCK:
        recording = serialization_lib.record_object_after_serialization
        serialization_lib.record_object_after_serialization = lambda obj, config: None
        try:
            yield
        finally:
            serialization_lib.record_object_after_serialization = recording
