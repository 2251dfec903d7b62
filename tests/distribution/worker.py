"""One worker of the multi-worker tests, run as `python worker.py OUT_DIR EPOCHS [CRASH_AFTER_EPOCH]`.

Trains a tiny classifier with `train_model` under the strategy TF_CONFIG selects ("auto"), on
the same synthetic batches in every worker, and saves its final weights and the epochs it ran.
"""

import json
import os
import sys
from pathlib import Path

from kpipe.training import TrainingConfig, make_strategy, train_model

strategy = make_strategy("auto")  # first, before TensorFlow runs anything

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

out, epochs = Path(sys.argv[1]), int(sys.argv[2])
crash_after = int(sys.argv[3]) if len(sys.argv) > 3 else None
rng = np.random.default_rng(0)
x = rng.integers(1, 20, size=(256, 6)).astype("int32")
y = (x[:, 0] > 10).astype("float32")
data = tf.data.Dataset.from_tensor_slices((x, y)).batch(64)


def build():
    inputs = keras.Input((6,), dtype="int32")
    h = keras.layers.GlobalAveragePooling1D()(keras.layers.Embedding(20, 4)(inputs))
    return keras.Model(inputs, keras.layers.Dense(1, activation="sigmoid")(h))


class Record(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.epochs = []

    def on_epoch_end(self, epoch, logs=None):
        self.epochs.append(epoch)
        if epoch == crash_after:
            raise KeyboardInterrupt  # stands in for a kill, after this epoch's backup is written


record = Record()
task = json.loads(os.environ.get("TF_CONFIG") or '{"task": {"index": "single"}}')["task"]["index"]
try:
    model, history = train_model(build, loss="binary_crossentropy", metrics=[], train_data=data,
                                 validation_data=data, config=TrainingConfig(epochs=epochs, early_stopping_patience=0),
                                 work_dir=out / "work", strategy=strategy, extra_callbacks=[record])
except KeyboardInterrupt:
    (out / f"crashed-{task}.json").write_text(json.dumps(record.epochs))
    raise SystemExit(0)
np.savez(out / f"weights-{task}.npz", *model.get_weights())
(out / f"epochs-{task}.json").write_text(json.dumps({"ran": record.epochs, "history": history}))
