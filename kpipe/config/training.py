"""The training section of pipeline configs, without TensorFlow (see kpipe.training.loop for the training)."""

from __future__ import annotations

import dataclasses

from kpipe.config.constraints import Checked, above, at_least, fraction, one_of, setting
from kpipe.errors import ConfigError

STRATEGIES = ("auto", "default", "one_device", "mirrored", "multi_worker", "tpu")
PRECISIONS = ("float32", "mixed_float16", "mixed_bfloat16", "auto")
JIT_COMPILE = {"auto": "auto", "on": True, "off": False}  # -> Keras' `compile(jit_compile=...)`
# Config name -> class in keras.optimizers (kpipe.training.loop looks it up there).
OPTIMIZER_CLASSES = {"adam": "Adam", "adamw": "AdamW", "rmsprop": "RMSprop", "sgd": "SGD"}
LEARNING_RATE_SCHEDULES = ("constant", "cosine", "linear_warmup")
# What early stopping can watch: a metric computed on the validation split (which tasks log which:
# `kpipe.tasks.registry.TaskSpec.monitors`).
EARLY_STOPPING_MONITORS = ("val_loss", "val_accuracy", "val_word_error_rate", "val_micro_f1", "val_bleu",
                           "val_entity_f1", "val_f1", "val_exact_match")


@dataclasses.dataclass(frozen=True, kw_only=True)
class TrainingConfig(Checked):
    """How a model is trained.

    Args:
        epochs: maximum number of passes over the training split.
        batch_size: examples per replica per step; the global batch is this times the replicas.
        learning_rate: optimizer step size (at the first epoch, with a schedule).
        learning_rate_schedule: "constant", or "cosine": epoch e of E trains at
            learning_rate · (1 + cos(π e / E)) / 2, from the full rate down towards 0 at the last epoch
            (a function of the epoch alone, so a resumed run trains at the rates it would have); or
            "linear_warmup", per step, as BERT-style fine-tuning does: from 0 up to learning_rate over the
            first `warmup_fraction` of the phase's steps, then linearly down to 0 at its last step.
        warmup_fraction: with "linear_warmup", the share of the steps that warm up.
        optimizer: "adam", "adamw", "rmsprop" or "sgd".
        weight_decay: "adamw" only: decoupled weight decay, never applied to biases nor to
            normalization scales and offsets (LayerNorm's gamma and beta).
        clipnorm: clip each gradient to this norm (0 = no clipping).
        early_stopping_patience: stop after this many epochs without a better `early_stopping_monitor`
            and keep the best weights (0 = train all epochs).
        early_stopping_monitor: what early stopping watches and keeps the best epoch by: "val_loss"
            (every task), "val_accuracy" (classify), "val_micro_f1" (classify with several labels per text,
            at a 0.5 threshold), "val_word_error_rate" or "val_bleu" (translate: the validation sources decoded
            after every epoch, greedy, scored as the test split is) or "val_entity_f1" (tag: the validation
            sentences tagged as the export tags them, entities scored conlleval's way).
        strategy: "auto" (multi_worker when TF_CONFIG describes a cluster; otherwise the default
            strategy on CPU, one device for one GPU, mirrored for several), "default", "one_device",
            "mirrored" (all GPUs; without GPUs, all logical CPUs), "multi_worker" (the cluster in
            TF_CONFIG, see `kpipe.training.multi_worker`) or "tpu".
        precision: "float32", "mixed_float16" (GPUs; the loss is scaled) or "mixed_bfloat16"
            (GPUs and recent CPUs): layers compute in 16 bits and keep float32 weights; output
            layers stay float32. "auto": mixed_bfloat16 on a CPU with bfloat16 units (AVX-512 BF16,
            AMX) and no GPU, float32 otherwise (kpipe.training.precision).
        jit_compile: "auto" (Keras' choice: XLA on GPUs when every layer supports it, never on a machine
            with CPUs only), "on" (the training step compiled by XLA, CPUs too: on 2 CPU cores lm-wikitext's gpt
            step took a median 1.74 s against 2.05 s without, benchmarks/xla_training.py; refused with the
            "multi_worker" strategy, whose loop XLA does not compile, and for replicas on several CPU devices) or
            "off".
        steps_per_execution: training batches per call from Python into TensorFlow; more cuts the
            per-step overhead of small, fast steps (the progress bar and batch callbacks then update
            once per call).
        steps_per_epoch: 0 = each epoch is one pass over the training split; N = each epoch stops after N
            batches (a bounded run over data too large to pass over, or a quick check), starting again from the
            beginning of the (reshuffled) split.
        worker_timeout_s: multi_worker only: how long to wait for every worker to join, and for
            any exchange between workers, before failing.
        seed: seeds weights, dropout and shuffling, so the same command gives the same run.
        refit_with_validation: forecast only: after choosing the number of epochs on the validation
            split, train a fresh model on training + validation windows for that many epochs and
            test that one (the statistical baselines are fitted on both splits too). Validation
            figures and interval widths come from the first model, which never saw those windows.
    """

    epochs: int = setting(5, at_least(1))
    batch_size: int = setting(64, at_least(1))
    learning_rate: float = setting(1e-3, above(0.0))
    learning_rate_schedule: str = setting("constant", one_of(LEARNING_RATE_SCHEDULES))
    warmup_fraction: float = setting(0.1, fraction())
    optimizer: str = setting("adam", one_of(OPTIMIZER_CLASSES))
    weight_decay: float = setting(0.004, at_least(0.0))
    clipnorm: float = setting(0.0, at_least(0.0))
    early_stopping_patience: int = setting(2, at_least(0))
    early_stopping_monitor: str = setting("val_loss", one_of(EARLY_STOPPING_MONITORS))
    strategy: str = setting("auto", one_of(STRATEGIES))
    precision: str = setting("float32", one_of(PRECISIONS))
    jit_compile: str = setting("auto", one_of(JIT_COMPILE))
    steps_per_execution: int = setting(1, at_least(1))
    steps_per_epoch: int = setting(0, at_least(0))
    worker_timeout_s: float = setting(300.0, above(0.0))
    seed: int = 1337
    refit_with_validation: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.jit_compile == "on" and self.strategy == "multi_worker":
            raise ConfigError(MULTI_WORKER_JIT)


# Also said by kpipe.training.loop when "auto" finds a cluster in TF_CONFIG.
MULTI_WORKER_JIT = ('training.jit_compile = "on" does not apply to strategy "multi_worker" (its training loop, '
                    'kpipe.training.multi_worker, is not compiled by XLA); use "auto" or "off"')
