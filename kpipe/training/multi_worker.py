"""Training on several machines with `tf.distribute.MultiWorkerMirroredStrategy`.

Keras 3 `Model.fit` fails under this strategy with TF 2.21 / Keras 3.15 ("Attempt to convert a
value (PerReplica...)", then "Invalid reduction dimension 0"; keras-team/keras#20585), so kpipe
trains it with its own small loop: `strategy.run` for each step and `strategy.reduce` for the loss,
the model's own `compute_loss` (which already divides by the number of replicas) and optimizer
(which all-reduces the gradients), and the same Keras callbacks `fit` would drive (resume,
history, early stopping). Every other strategy still trains with `fit`.

Each worker runs the same `kpipe run` command with its own `TF_CONFIG`. The strategy has to be
created before TensorFlow runs anything, so `kpipe run` creates it first. Only the chief writes
checkpoints, history and the export; the other workers write theirs to temporary folders that are
deleted (some saves need every worker to take part, so they all save).
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time

import keras
import tensorflow as tf

from kpipe.config.cluster import cluster_size, read_tf_config
from kpipe.errors import ConfigError, KpipeError
from kpipe.exports import keras_private

log = logging.getLogger(__name__)

# Lost peers surface as these (a dead worker stops the coordination service's heartbeats; a stuck
# collective runs past `CommunicationOptions.timeout_seconds`).
PEER_FAILURES = (tf.errors.UnavailableError, tf.errors.DeadlineExceededError, tf.errors.AbortedError,
                 tf.errors.CancelledError)


class WorkerLostError(KpipeError):
    """Another worker died or stopped answering; the run cannot go on without it."""


# Run in a separate process: while TF waits for the cluster it holds Python's GIL (and ignores
# SIGTERM), so no thread or signal handler of the waiting process itself can end the wait.
_WATCHDOG = """
import os, select, signal, sys
ready, _, _ = select.select([sys.stdin], [], [], float(sys.argv[1]))
if not ready:
    print(sys.argv[2], file=sys.stderr, flush=True)
    os.kill(int(sys.argv[3]), signal.SIGKILL)
"""


def make_multi_worker_strategy(timeout_s: float) -> tf.distribute.MultiWorkerMirroredStrategy:
    """Join the cluster in TF_CONFIG, or end this process if it is not complete within `timeout_s`.

    TF itself waits for missing workers forever at this point, so a watchdog process kills this
    one (SIGKILL, exit status 137) with a message that names the cluster; collectives afterwards
    time out after `timeout_s` too.
    """
    tf_config = read_tf_config()
    task = tf_config["task"]
    message = (f"kpipe: error: worker {task['type']}:{task['index']} waited {timeout_s:g} s for the cluster "
               f"{json.dumps(tf_config['cluster'])} to start; start every worker with the same cluster in "
               "TF_CONFIG (or raise training.worker_timeout_s)")
    # The watchdog stops when its stdin closes: when we have joined, or when this process ends.
    watchdog = subprocess.Popen([sys.executable, "-c", _WATCHDOG, str(timeout_s), message, str(os.getpid())],
                                stdin=subprocess.PIPE)
    try:
        strategy = tf.distribute.MultiWorkerMirroredStrategy(
            communication_options=tf.distribute.experimental.CommunicationOptions(timeout_seconds=timeout_s))
    except RuntimeError as error:
        if "program startup" in str(error):
            raise ConfigError("strategy 'multi_worker' must be created before TensorFlow runs anything: start "
                              "each worker with `kpipe run ...`, or call kpipe.training.loop.make_strategy"
                              "('multi_worker') first thing in your program") from None
        raise
    finally:
        watchdog.stdin.close()
        watchdog.wait()
    log.info("Joined the cluster as %s %s of %d task(s)", task["type"], task["index"], cluster_size(tf_config))
    return strategy


def is_multi_worker(strategy: tf.distribute.Strategy) -> bool:
    return isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy)


def is_chief(strategy: tf.distribute.Strategy) -> bool:
    """Whether this process writes checkpoints and exports (always, outside multi-worker runs)."""
    return strategy.extended.should_checkpoint


def _shard_by_example(dataset: tf.data.Dataset) -> tf.data.Dataset:
    # Datasets built from in-memory arrays have no files to shard, so shard their batches. Streamed shards
    # (kpipe.datasets.streamed_text) turn auto-sharding off: each worker already reads only its own rows.
    if dataset.options().experimental_distribute.auto_shard_policy == tf.data.experimental.AutoShardPolicy.OFF:
        return dataset
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
    return dataset.with_options(options)


def fit(model: keras.Model, train_data: tf.data.Dataset, validation_data: tf.data.Dataset | None, *,
        strategy: tf.distribute.Strategy, initial_epoch: int, epochs: int, callbacks: list) -> None:
    """`model.fit` for MultiWorkerMirroredStrategy: the compiled model trained with a custom loop.

    Logs `loss` and the compiled metrics (and their `val_` figures) per epoch to the callbacks, which may stop
    training (`model.stop_training`) or restore a backup (`model._initial_epoch`, as with `fit`).

    Raises:
        WorkerLostError: another worker died or a collective timed out.
    """
    train = strategy.experimental_distribute_dataset(_shard_by_example(train_data))
    validation = (strategy.experimental_distribute_dataset(_shard_by_example(validation_data))
                  if validation_data is not None else None)

    def replica_train_step(*batch):
        x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(batch)
        with tf.GradientTape() as tape:
            y_pred = model(x, training=True)
            loss = model.compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sample_weight,
                                      training=True)  # already / replicas
            scaled = model.optimizer.scale_loss(loss)  # loss scaling under mixed_float16
        gradients = tape.gradient(scaled, model.trainable_variables)
        model.optimizer.apply_gradients(zip(gradients, model.trainable_variables))
        model.compute_metrics(x, y, y_pred, sample_weight)  # e.g. accuracy: early stopping may watch it
        return loss

    def replica_test_step(*batch):
        x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(batch)
        y_pred = model(x, training=False)
        model.compute_metrics(x, y, y_pred, sample_weight)
        return model.compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sample_weight, training=False)

    # One trace for all batch shapes (length buckets, last partial batch).
    @tf.function(input_signature=[train.element_spec])
    def train_step(batch):
        return strategy.reduce("SUM", strategy.run(replica_train_step, args=batch), axis=None)

    @tf.function(input_signature=[validation.element_spec] if validation is not None else None)
    def test_step(batch):
        return strategy.reduce("SUM", strategy.run(replica_test_step, args=batch), axis=None)

    def one_pass(step, dataset, prefix="") -> dict[str, float]:
        """The mean loss over `dataset` and the compiled metrics' figures (read across the workers)."""
        model.reset_metrics()
        total, steps = 0.0, 0
        for batch in dataset:
            total += float(step(batch))
            steps += 1
        figures = {name: float(value) for name, value in model.get_metrics_result().items()
                   if name != "loss" and len(getattr(value, "shape", ())) == 0}  # scalars: what callbacks compare
        return {f"{prefix}{name}": value for name, value in {"loss": total / max(steps, 1), **figures}.items()}

    # As in `fit`, callbacks run in the strategy's scope (restoring a backup builds optimizer variables).
    with strategy.scope():
        callback_list = keras.callbacks.CallbackList(callbacks, model=model, epochs=epochs)
        model.stop_training = False
        try:
            callback_list.on_train_begin()
            start = keras_private.resume_epoch(model) or initial_epoch  # set by a restored checkpoint
            for epoch in range(start, epochs):
                callback_list.on_epoch_begin(epoch)
                started = time.perf_counter()
                logs = one_pass(train_step, train)
                if validation is not None:
                    logs.update(one_pass(test_step, validation, "val_"))
                log.info("Epoch %d/%d: %s (%.1f s)", epoch + 1, epochs,
                         ", ".join(f"{k} {v:.4f}" for k, v in logs.items()), time.perf_counter() - started)
                callback_list.on_epoch_end(epoch, logs)
                if model.stop_training:
                    break
            callback_list.on_train_end()
        except PEER_FAILURES as error:
            first_line = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            raise WorkerLostError(
                f"multi-worker training stopped: another worker died or stopped answering ({first_line[:300]}); "
                "restart every worker with the same command to resume from the last finished epoch") from None
