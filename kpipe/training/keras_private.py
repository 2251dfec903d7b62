"""The private Keras API kpipe relies on, in one place, each with why; `tests/unit/training/test_keras_private.py`
checks that each still does what kpipe needs, so a Keras release that changes one fails there, by name.

- `Model._initial_epoch`: `fit` starts at it when set (Keras' own BackupAndRestore sets it); kpipe's exact
  resume (`kpipe.training.resume`) sets it from a checkpoint in `on_train_begin`.
- `Model._symbolic_build`: builds the optimizer's and the compiled metrics' variables from a dataset's element
  spec; Keras calls it only under a distribution strategy, kpipe calls it before every `fit` so the train step
  is traced once, not twice (tensorflow#48851).
"""

from __future__ import annotations

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
