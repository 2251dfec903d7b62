"""One worker of the multi-worker tests, run as `python worker.py OUT_DIR EPOCHS [CRASH_AFTER_EPOCH]`.

Trains a tiny classifier with `train_model` under the strategy TF_CONFIG selects ("auto"), on
the same synthetic batches in every worker, and saves its final weights, the epochs it ran, its
strategy and replica count, and the examples its replica trained on (the first column of each
example is its row number, so the halves of each global batch can be told apart).
"""

import json
import os
import sys
from pathlib import Path

from kpipe.config.training import TrainingConfig
from kpipe.training.loop import make_strategy, train_model

strategy = make_strategy("auto")  # first, before TensorFlow runs anything

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

out, epochs = Path(sys.argv[1]), int(sys.argv[2])
crash_after = int(sys.argv[3]) if len(sys.argv) > 3 else None
rng = np.random.default_rng(0)
x = rng.integers(1, 20, size=(256, 6)).astype("int32")
y = (x[:, 1] > 10).astype("float32")

row_ids = np.arange(256)
data = tf.data.Dataset.from_tensor_slices((np.c_[x, row_ids].astype("int32"), y)).batch(64)


seen_rows = []  # row numbers this process trained on, batch by batch


class RecordRows(keras.layers.Layer):
    """Passes its input through; while training, notes which rows (by their row-id column) it saw."""

    def call(self, inputs, training=False):
        if training:
            rows = inputs[:, -1]
            noted = tf.py_function(lambda r: seen_rows.append(r.numpy().tolist()) or 0, [rows], tf.int64)
            with tf.control_dependencies([noted]):
                return tf.identity(inputs[:, :-1])
        return inputs[:, :-1]


def build():
    inputs = keras.Input((7,), dtype="int32")
    tokens = RecordRows()(inputs)
    h = keras.layers.GlobalAveragePooling1D()(keras.layers.Embedding(20, 4)(tokens))
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
    model, history = train_model(build, loss="binary_crossentropy", metrics=["accuracy"], train_data=data,
                                 validation_data=data, config=TrainingConfig(epochs=epochs, early_stopping_patience=0),
                                 work_dir=out / "work", strategy=strategy, extra_callbacks=[record])
except KeyboardInterrupt:
    (out / f"crashed-{task}.json").write_text(json.dumps(record.epochs))
    raise SystemExit(0)
np.savez(out / f"weights-{task}.npz", *model.get_weights())
(out / f"epochs-{task}.json").write_text(json.dumps({
    "ran": record.epochs, "history": history, "strategy": type(strategy).__name__,
    "replicas": strategy.num_replicas_in_sync, "seen_rows": seen_rows}))
