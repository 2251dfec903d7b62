"""Checkpoint averaging: the weights of the last few epochs, averaged element by element (as NMT
toolkits do with their last checkpoints), which often generalise better than any one of them."""

from __future__ import annotations

from pathlib import Path

import keras
import numpy as np


class EpochWeights(keras.callbacks.Callback):
    """Saves the model's weights after every epoch into `folder` (`epoch_001.weights.h5`, ...), so
    they survive a kill and resume like the rest of the run's state; written by the chief only."""

    def __init__(self, folder: Path, write: bool = True):
        super().__init__()
        self.folder, self.write = Path(folder), write

    def path(self, epoch: int) -> Path:
        """The file of epoch `epoch` (1-based)."""
        return self.folder / f"epoch_{epoch:03d}.weights.h5"

    def on_epoch_end(self, epoch, logs=None):
        if self.write:
            self.folder.mkdir(parents=True, exist_ok=True)
            self.model.save_weights(self.path(epoch + 1), overwrite=True)


def averaged_weights(model: keras.Model, paths: list[Path]) -> list[np.ndarray]:
    """The element-wise mean of the weights saved in `paths` (each from `model.save_weights`).
    Leaves `model` holding the last file's weights: the caller sets what it keeps."""
    total = None
    for path in paths:
        model.load_weights(path)
        weights = [np.asarray(w, np.float64) for w in model.get_weights()]
        total = weights if total is None else [t + w for t, w in zip(total, weights)]
    return [(t / len(paths)).astype(w.dtype) for t, w in zip(total, model.get_weights())]
