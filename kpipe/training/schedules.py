"""Learning-rate schedules that change every step (the epoch-level cosine schedule is in `loop`)."""

from __future__ import annotations

import keras


@keras.saving.register_keras_serializable(package="kpipe")
class LinearWarmupDecay(keras.optimizers.schedules.LearningRateSchedule):
    """The rate BERT-style fine-tuning uses: from 0 up to `peak` over `warmup_steps` steps, then linearly
    down to 0 at `total_steps` (and 0 after):

        rate(s) = peak · s / warmup_steps                                      for s < warmup_steps
        rate(s) = peak · max(0, total_steps - s) / (total_steps - warmup_steps)  otherwise

    A function of the optimizer's step alone, so a resumed run (which restores the step) goes on at the
    rate it would have had.
    """

    def __init__(self, peak: float, warmup_steps: int, total_steps: int):
        if not 0 <= warmup_steps < total_steps:
            raise ValueError(f"`warmup_steps` must be in [0, total_steps). Received: warmup_steps={warmup_steps}, "
                             f"total_steps={total_steps}")
        self.peak, self.warmup_steps, self.total_steps = float(peak), int(warmup_steps), int(total_steps)

    def __call__(self, step):
        step = keras.ops.cast(step, "float32")
        warmup = self.peak * step / max(self.warmup_steps, 1)
        decay = self.peak * keras.ops.maximum(0.0, self.total_steps - step) / (self.total_steps - self.warmup_steps)
        return keras.ops.where(step < self.warmup_steps, warmup, decay)

    def get_config(self) -> dict:
        return {"peak": self.peak, "warmup_steps": self.warmup_steps, "total_steps": self.total_steps}
