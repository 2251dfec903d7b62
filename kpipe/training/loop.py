"""Training shared by every task: strategy choice, optimizer, callbacks, resume after a kill."""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools
import logging
import math
import os
import sys
import time
import warnings
from pathlib import Path
from typing import Callable

import keras
import numpy as np
import tensorflow as tf

from kpipe.training import multi_worker
from kpipe.config.strict import check_choice
from kpipe.errors import ConfigError
from kpipe.exports import keras_private
from kpipe.training.progress import ProgressLines
from kpipe.training.resume import EpochCheckpoint, ResumableEarlyStopping
from kpipe.training.schedules import LinearWarmupDecay
from kpipe.config.training import JIT_COMPILE, MULTI_WORKER_JIT, OPTIMIZER_CLASSES, STRATEGIES, TrainingConfig
from kpipe.training.precision import precision_scope, resolve_precision

log = logging.getLogger(__name__)

OPTIMIZERS = {name: getattr(keras.optimizers, cls) for name, cls in OPTIMIZER_CLASSES.items()}

# Callbacks every `train_model` call in this context adds to its own (e.g. a tuner's pruning reporter).
_WATCHERS: contextvars.ContextVar[tuple] = contextvars.ContextVar("kpipe_training_watchers", default=())


@contextlib.contextmanager
def watching(*callbacks: keras.callbacks.Callback):
    """Run the enclosed training with `callbacks` added to every `train_model` call (after kpipe's own, so
    each epoch's logs already hold the validation figures)."""
    token = _WATCHERS.set(_WATCHERS.get() + callbacks)
    try:
        yield
    finally:
        _WATCHERS.reset(token)


def resolve_strategy_name(name: str) -> str:
    """The strategy `make_strategy(name)` makes: "auto" resolved for this machine (see there).

    A cluster in TF_CONFIG is recognised without touching TensorFlow's devices, which the
    multi-worker strategy must be created before."""
    check_choice("strategy", name, STRATEGIES)
    if name != "auto":
        return name
    if os.environ.get("TF_CONFIG") and multi_worker.cluster_size(multi_worker.read_tf_config()) > 1:
        return "multi_worker"
    gpus = tf.config.list_logical_devices("GPU")
    return "default" if not gpus else "one_device" if len(gpus) == 1 else "mirrored"


def make_strategy(name: str, *, worker_timeout_s: float = 300.0) -> tf.distribute.Strategy:
    """The tf.distribute strategy for `name` given the devices on this machine.

    "auto" picks multi_worker when TF_CONFIG describes a cluster of several tasks, else the
    default strategy without a GPU, `OneDeviceStrategy` with one GPU and `MirroredStrategy` (all
    GPUs) with several. The multi-worker strategy must be made before TensorFlow runs anything;
    later calls return the same one.
    """
    name = resolve_strategy_name(name)
    if name == "multi_worker":
        return _multi_worker_strategy(worker_timeout_s)
    if name == "tpu":
        return _tpu_strategy()
    gpus = tf.config.list_logical_devices("GPU")
    if name == "default":
        return tf.distribute.get_strategy()
    if name == "one_device":
        return tf.distribute.OneDeviceStrategy(gpus[0].name if gpus else "/cpu:0")
    if gpus:
        return tf.distribute.MirroredStrategy()
    # Without GPUs, MirroredStrategy would use CPU:0 alone; mirror over the logical CPUs instead
    # (see `tf.config.set_logical_device_configuration`), which is how tests run 2 replicas on a CPU.
    return tf.distribute.MirroredStrategy([d.name for d in tf.config.list_logical_devices("CPU")])


@functools.cache
def _multi_worker_strategy(worker_timeout_s: float) -> tf.distribute.Strategy:
    return multi_worker.make_multi_worker_strategy(worker_timeout_s)  # one per process: it configures TF's runtime


@functools.cache
def _tpu_strategy() -> tf.distribute.Strategy:
    try:
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver()
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
    except (ValueError, tf.errors.OpError) as error:
        raise ConfigError(f"strategy 'tpu' found no TPU ({str(error).splitlines()[0][:200]}); run on a TPU VM, "
                          "or use --strategy auto") from None
    return tf.distribute.TPUStrategy(resolver)


def cosine_rate(base: float, epoch: int, epochs: int) -> float:
    """The cosine schedule's rate for `epoch` (0-based) of `epochs`: base at epoch 0, falling towards 0."""
    return base * 0.5 * (1 + math.cos(math.pi * epoch / epochs))


class EpochTimer(keras.callbacks.Callback):
    """Adds `epoch_seconds` (wall time of the epoch, validation included) to each epoch's logs."""

    def on_epoch_begin(self, epoch, logs=None):
        self._started = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None:
            logs["epoch_seconds"] = time.perf_counter() - self._started


@dataclasses.dataclass(frozen=True)
class FineTuneSchedule:
    """Two-phase transfer learning: train with some layers frozen, then unfreeze them and go on.

    The model is built with the pretrained layers frozen; after `frozen_epochs` epochs `unfreeze`
    makes them trainable and the model is recompiled with a fresh optimizer at `learning_rate`
    (lower than the first phase's, so the pretrained weights move gently).
    """

    frozen_epochs: int
    learning_rate: float
    unfreeze: Callable[[keras.Model], None]


def _outside_strategy(model: keras.Model, build: Callable[[], keras.Model], strategy: tf.distribute.Strategy,
                      config: TrainingConfig, prepare: Callable[[keras.Model], None] | None = None) -> keras.Model:
    """The trained model as plain variables: a copy built outside the strategy when there is one.

    A model built under MirroredStrategy holds distributed variables, which a SavedModel signature
    cannot capture; exporting a copy keeps every export independent of how it was trained.
    """
    if strategy is tf.distribute.get_strategy():
        return model
    with precision_scope(config.precision):
        plain = build()
    if prepare:
        prepare(plain)  # e.g. unfreeze, so that its layers are in the state of the model it copies
    plain.set_weights(model.get_weights())
    return plain


# Variables no optimizer should decay: biases, and normalization scales and offsets (matched by name).
NO_WEIGHT_DECAY = ("bias", "gamma", "beta")


def make_optimizer(config: TrainingConfig, learning_rate: float, steps: int) -> keras.optimizers.Optimizer:
    """The configured optimizer at `learning_rate`, for a phase of `steps` training steps ("linear_warmup"
    needs them); AdamW decays every weight but biases and normalization parameters."""
    rate = learning_rate
    if config.learning_rate_schedule == "linear_warmup":
        rate = LinearWarmupDecay(learning_rate, warmup_steps=int(config.warmup_fraction * steps),
                                 total_steps=max(steps, 1))
    options = {"weight_decay": config.weight_decay} if config.optimizer == "adamw" else {}
    optimizer = OPTIMIZERS[config.optimizer](learning_rate=rate, clipnorm=config.clipnorm or None, **options)
    if config.optimizer == "adamw":
        optimizer.exclude_from_weight_decay(var_names=list(NO_WEIGHT_DECAY))
    return optimizer


def steps_per_epoch(train_data: tf.data.Dataset) -> int:
    """Batches per epoch: the dataset's cardinality, or counted once when it has none (length buckets)."""
    batches = int(train_data.cardinality())
    return batches if batches >= 0 else int(train_data.reduce(0, lambda count, _: count + 1))


def check_jit_compile(config: TrainingConfig, strategy: tf.distribute.Strategy) -> None:
    """Refuse `jit_compile = "on"` where XLA cannot compile the step: the multi-worker loop (not compiled by
    XLA), or replicas on several CPU devices (XLA compiles for the first and cannot reach the others' variables,
    a failure in the first step otherwise)."""
    if config.jit_compile != "on":
        return
    if multi_worker.is_multi_worker(strategy):
        raise ConfigError(MULTI_WORKER_JIT)
    if strategy.num_replicas_in_sync > 1 and not tf.config.list_logical_devices("GPU"):
        raise ConfigError(f'training.jit_compile = "on" cannot compile one step for {strategy.num_replicas_in_sync} '
                          'CPU devices; use "auto" or "off", or --strategy default')


def _compile(model: keras.Model, config: TrainingConfig, learning_rate: float, loss, metrics,
             weighted_metrics, steps: int = 0) -> None:
    optimizer = make_optimizer(config, learning_rate, steps)
    model.compile(optimizer=optimizer, loss=loss, metrics=metrics, weighted_metrics=weighted_metrics,
                  steps_per_execution=config.steps_per_execution, jit_compile=JIT_COMPILE[config.jit_compile])


def _build_training_state(model: keras.Model, train_data: tf.data.Dataset) -> None:
    """Create the optimizer's and the compiled metrics' variables before `fit` traces its train step.

    Keras 3.15 builds them ahead of time only under a distribution strategy; otherwise the first trace of
    the step creates them, and a tf.function that creates variables is traced a second time
    (tensorflow#48851): 1.5-2.5 s of every run on 2 CPU cores for a small BiLSTM. This is Keras' own
    build for the strategy case (`_symbolic_build`), from the dataset's element spec: no batch is read.
    Models with their own train step (word2vec's sparse trainer) build what they need themselves.
    """
    standard_step = type(model).train_step is keras.Model.train_step
    if standard_step and getattr(model, "_distribute_strategy", None) is None:
        keras_private.build_training_state(model, train_data.element_spec)


def _iterators_per_epoch(train_data: tf.data.Dataset, strategy: tf.distribute.Strategy) -> int:
    """How many iterators over `train_data` the training loop opens per epoch (see `kpipe.training.resume`)."""
    if multi_worker.is_multi_worker(strategy):
        return 1  # kpipe's own loop: one `for` per epoch
    return 2 if int(train_data.cardinality()) > 0 else 1  # Keras' EpochIterator


def monitor_mode(monitor: str) -> str:
    """"max" for monitors where higher is better (accuracy, F1, BLEU, exact match), "min" for the rest (losses, error rates)."""
    return "max" if monitor.endswith(("accuracy", "f1", "bleu", "exact_match")) else "min"


def kept_epoch(history: list[dict], config: TrainingConfig) -> int:
    """The epoch (1-based) whose weights `train_model` returned: the best by `config.early_stopping_monitor`
    (the first of equals, as early stopping keeps it), or the last without early stopping or when an epoch
    did not log the monitor."""
    values = [h.get(config.early_stopping_monitor) for h in history]
    if not config.early_stopping_patience or not values or None in values:
        return len(history)
    return int((np.argmax if monitor_mode(config.early_stopping_monitor) == "max" else np.argmin)(values)) + 1


def even_first_batch(dataset: tf.data.Dataset, replicas: int) -> tf.data.Dataset:
    """The same batches, except that a first batch whose rows do not divide among `replicas` is split in two:
    the rows that do, then the rest.

    Keras 3.15 builds its metrics before `evaluate` from the first batch, averaged across replicas
    (`distribute_strategy.reduce("MEAN", batch)`), which fails when the replicas got unequal shares
    ("Inputs to operation AddN ... must have the same size and shape"). Length buckets make short
    first batches common on small validation sets. The order of the examples is unchanged, so this is
    only for datasets that iterate the same way every time (validation, not shuffled training data).
    """
    if replicas <= 1:
        return dataset

    def split(*batch):
        element = batch[0] if len(batch) == 1 else batch
        rows = tf.shape(tf.nest.flatten(element)[0])[0]
        even = rows - rows % replicas
        cut = tf.where(even > 0, even, rows)  # fewer rows than replicas: nothing to split off
        first = tf.nest.map_structure(lambda t: t[:cut], element)
        rest = tf.nest.map_structure(lambda t: t[cut:], element)
        return (tf.data.Dataset.from_tensors(first)
                .concatenate(tf.data.Dataset.from_tensors(rest).filter(lambda *r: cut < rows)))

    return dataset.take(1).flat_map(split).concatenate(dataset.skip(1))


def train_model(build: Callable[[], keras.Model], *, loss, metrics: list, train_data: tf.data.Dataset,
                validation_data: tf.data.Dataset | None, config: TrainingConfig, work_dir: Path,
                strategy: tf.distribute.Strategy, extra_callbacks: list | tuple = (),
                metric_callbacks: list | tuple = (),
                fine_tune: FineTuneSchedule | None = None,
                weighted_metrics: list | None = None) -> tuple[keras.Model, list[dict[str, float]]]:
    """Build, compile and fit a model under `strategy`, resumable from `work_dir`.

    `work_dir` holds the `BackupAndRestore` state, TensorBoard logs and the per-epoch history:
    rerunning the same command after a kill resumes from the last finished epoch, in either phase
    of a fine-tuning schedule (the weights at the end of the frozen phase are kept in `work_dir`).

    Args:
        build: makes the uncompiled model; called inside `strategy.scope()`.
        loss, metrics, weighted_metrics: passed to `compile` (weighted metrics use the datasets'
            sample weights, e.g. to leave padding out).
        train_data, validation_data: batched datasets of (inputs, targets).
        config: epochs, optimizer, early stopping, seed.
        work_dir: folder for resumable state; created if absent.
        strategy: from `make_strategy`.
        extra_callbacks: more Keras callbacks, run after kpipe's own.
        metric_callbacks: callbacks that add validation figures to each epoch's logs (e.g.
            `val_word_error_rate`); they run before early stopping and the checkpoint, so both see them.
        fine_tune: train `fine_tune.frozen_epochs` epochs as built, then unfreeze and train the rest
            of `config.epochs` at `fine_tune.learning_rate`. Early stopping watches the second phase only.

    Returns:
        (model, history): the trained model (best validation weights if early stopping stopped
        it; under a distribution strategy, a copy with plain variables, ready to export) and one
        dict of metrics per finished epoch.
    """
    check_jit_compile(config, strategy)
    keras.utils.set_random_seed(config.seed)
    work_dir.mkdir(parents=True, exist_ok=True)
    if config.steps_per_epoch:
        train_data = train_data.take(config.steps_per_epoch)  # each epoch a bounded number of batches
    if validation_data is not None and not multi_worker.is_multi_worker(strategy):
        validation_data = even_first_batch(validation_data, strategy.num_replicas_in_sync)
    # A per-step schedule needs the steps of each phase (counted once when the dataset cannot tell).
    epoch_steps = steps_per_epoch(train_data) if config.learning_rate_schedule == "linear_warmup" else 0
    with precision_scope(config.precision), strategy.scope():
        model = build()  # mixed_float16: Keras scales the loss
        _compile(model, config, config.learning_rate, loss, metrics, weighted_metrics,
                 steps=epoch_steps * (fine_tune.frozen_epochs if fine_tune else config.epochs))
    _log_start(model, config, strategy)
    fit = _Phases(model, config, work_dir, train_data, validation_data, strategy, metric_callbacks,
                  extra_callbacks).fit

    if fine_tune is None:
        history = fit("checkpoints", 0, config.epochs, early_stopping=True)
        return _outside_strategy(model, build, strategy, config), history

    # === Phase 1: pretrained layers frozen (a rerun restores its last checkpoint and trains no more) ===
    log.info("Phase 1: %d epoch(s) with the pretrained layers frozen", fine_tune.frozen_epochs)
    frozen_history = fit("checkpoints_frozen", 0, fine_tune.frozen_epochs, early_stopping=False)

    # === Phase 2: everything trainable, fresh optimizer at the lower learning rate ===
    log.info("Phase 2: unfrozen, learning rate %g, up to epoch %d", fine_tune.learning_rate, config.epochs)
    with strategy.scope():
        fine_tune.unfreeze(model)
        _compile(model, config, fine_tune.learning_rate, loss, metrics, weighted_metrics,
                 steps=epoch_steps * (config.epochs - fine_tune.frozen_epochs))
    history = fit("checkpoints", fine_tune.frozen_epochs, config.epochs, early_stopping=True)
    return _outside_strategy(model, build, strategy, config, prepare=fine_tune.unfreeze), frozen_history + history


def _log_start(model: keras.Model, config: TrainingConfig, strategy: tf.distribute.Strategy) -> None:
    gpus = len(tf.config.list_logical_devices("GPU"))
    log.info("Training %s (%s parameters) for up to %d epochs on %s with %s, %d replica(s), global batch %d, %s",
             model.name, f"{model.count_params():,}", config.epochs,
             f"{gpus} GPU(s)" if gpus else "the CPU (TensorFlow sees no GPU)",
             "MultiWorkerMirroredStrategy" if multi_worker.is_multi_worker(strategy) else type(strategy).__name__,
             strategy.num_replicas_in_sync, config.batch_size * strategy.num_replicas_in_sync,
             resolve_precision(config.precision))


@dataclasses.dataclass
class _Phases:
    """Fits a compiled model phase by phase, each phase resumable from its own checkpoint folder in `work_dir`."""

    model: keras.Model
    config: TrainingConfig
    work_dir: Path
    train_data: tf.data.Dataset
    validation_data: tf.data.Dataset | None
    strategy: tf.distribute.Strategy
    metric_callbacks: list | tuple
    extra_callbacks: list | tuple

    def fit(self, phase: str, initial_epoch: int, epochs: int, early_stopping: bool) -> list[dict[str, float]]:
        """Epochs `initial_epoch` to `epochs` of one phase; its history (a resumed phase's finished epochs too)."""
        config, model, strategy = self.config, self.model, self.strategy
        chief = multi_worker.is_chief(strategy)
        stopper = None
        if early_stopping and config.early_stopping_patience:
            monitor = config.early_stopping_monitor
            stopper = ResumableEarlyStopping(monitor=monitor, patience=config.early_stopping_patience,
                                             mode=monitor_mode(monitor),
                                             restore_best_weights=True, verbose=1)
        # Order matters: the timer and early stopping update the epoch's logs and state before the
        # checkpoint saves them.
        checkpoint = EpochCheckpoint(self.work_dir / phase, write=chief, train_data=self.train_data,
                                     early_stopping=stopper,
                                     iterators_per_epoch=_iterators_per_epoch(self.train_data, strategy),
                                     initial_epoch=initial_epoch)
        callbacks = [EpochTimer(), *self.metric_callbacks, *([stopper] if stopper else []), checkpoint]
        if config.learning_rate_schedule == "cosine":
            base = float(keras.ops.convert_to_numpy(model.optimizer.learning_rate))  # this phase's rate
            callbacks.insert(0, keras.callbacks.LearningRateScheduler(
                lambda epoch: cosine_rate(base, epoch, config.epochs)))
        if chief:
            callbacks.append(keras.callbacks.TensorBoard(str(self.work_dir / "tensorboard")))
        callbacks += [*self.extra_callbacks, *_WATCHERS.get()]
        if not sys.stdout.isatty():  # Keras prints one line per epoch there: a long epoch would print nothing
            callbacks.append(ProgressLines(config.batch_size * strategy.num_replicas_in_sync))
        keras_private.set_resume_epoch(model, None)  # set by the previous phase's restore, which `fit` would prefer
        if multi_worker.is_multi_worker(strategy):  # Keras' fit fails there: see kpipe.training.multi_worker
            multi_worker.fit(model, self.train_data, self.validation_data, strategy=strategy,
                             initial_epoch=initial_epoch, epochs=epochs, callbacks=callbacks)
            return checkpoint.history
        with warnings.catch_warnings():
            # Length-bucketed datasets have no known size, so Keras finds each epoch's end by running
            # out of data, and warns every epoch as if that were a mistake.
            warnings.filterwarnings("ignore", message="Your input ran out of data")
            _build_training_state(model, self.train_data)
            model.fit(self.train_data, validation_data=self.validation_data, initial_epoch=initial_epoch,
                      epochs=epochs, callbacks=callbacks, shuffle=False, verbose=1 if sys.stdout.isatty() else 2)
        return checkpoint.history
