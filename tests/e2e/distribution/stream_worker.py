"""One worker of the streamed-shards cluster test, run as `python stream_worker.py SHARDS_GLOB CACHE OUT_DIR
[SHARDS_GLOB CACHE OUT_DIR ...]`.

Under the strategy TF_CONFIG selects, for each dataset in turn (one cluster start for all of them), reads this
worker's part of the sharded training split as kpipe's multi-worker loop does (`kpipe.training.multi_worker.fit`: the
dataset distributed by the strategy, auto-sharding left off), and trains a tiny model for two epochs whose first
layer notes the row ids it trains on (each text starts with its row id). Saves the ids per epoch in OUT_DIR.
"""

import json
import sys
from pathlib import Path

from kpipe.training.loop import make_strategy

strategy = make_strategy("auto")  # first, before TensorFlow runs anything

import keras  # noqa: E402
import tensorflow as tf  # noqa: E402

from kpipe.config.cluster import read_tf_config, worker_position  # noqa: E402
from kpipe.config.training import TrainingConfig  # noqa: E402
from kpipe.datasets.streamed_text import Worker, load_streamed_text  # noqa: E402
from kpipe.datasets.text_classification import TextClassificationDataConfig  # noqa: E402
from kpipe.training.loop import train_model  # noqa: E402

worker = Worker(*worker_position(read_tf_config()))


class Epoch(keras.callbacks.Callback):
    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch


class RecordRows(keras.layers.Layer):
    """Calls `note(ids)` with the row ids of each training batch."""

    def __init__(self, note, **kwargs):
        super().__init__(**kwargs)
        self.note = note

    def call(self, inputs, training=False):
        if training:
            noted = tf.py_function(self.note, [inputs], tf.int64)
            with tf.control_dependencies([noted]):
                return tf.identity(inputs)[:, None] * 0.0
        return inputs[:, None] * 0.0


def train_on(pattern: str, cache: Path, out: Path) -> None:
    splits = load_streamed_text(TextClassificationDataConfig(source="shards", path=pattern, id_column="id"), cache,
                                worker)
    seen = []  # (epoch, row id) of every row this worker's replica trained on
    epoch_callback = Epoch()
    data = (splits.train.shuffled(seed=1).batch(16)
            .map(lambda text, label: (tf.strings.to_number(tf.strings.split(text).to_tensor()[:, 0], tf.float32),
                                      tf.cast(label, tf.float32))))

    def note(ids):
        seen.extend((epoch_callback.epoch, int(i)) for i in ids.numpy())
        return 0

    def build():
        inputs = keras.Input((), dtype="float32")
        return keras.Model(inputs, keras.layers.Dense(1, activation="sigmoid")(RecordRows(note)(inputs)))

    train_model(build, loss="binary_crossentropy", metrics=[], train_data=data, validation_data=None,
                config=TrainingConfig(epochs=2, early_stopping_patience=0, seed=3), work_dir=out / "work",
                strategy=strategy, extra_callbacks=[epoch_callback])
    (out / f"seen-{worker.index}.json").write_text(json.dumps(seen))


arguments = sys.argv[1:]
for start in range(0, len(arguments), 3):
    train_on(arguments[start], Path(arguments[start + 1]), Path(arguments[start + 2]))
