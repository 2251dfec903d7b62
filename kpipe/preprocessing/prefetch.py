"""The last stage of every kpipe input pipeline: prefetch, with tf.data's autotuning model turned off.

With autotuning on (tf.data's default), each iterator starts a model thread on its first batch that re-tunes
the `AUTOTUNE` parallelism and buffer sizes at growing intervals, up to a minute apart. Deleting such an
iterator waits for that thread to stop, and in TensorFlow 2.21 on these 2 cores the wait often lasted until
the thread's next interval ended: single garbage-collector passes of 10-86 s that freed an old iterator
(native stacks: `RootDataset::Iterator::~Iterator` waiting on its thread, the thread in
`Model::OptimizeLoop`'s timed wait). Three copies of tests/e2e/test_runs.py side by side took 142-208 s
with autotuning, 106 s with kpipe's pipelines ending here (2026-11-28). Without the model, `AUTOTUNE`
parallelism is fixed at the smaller of 16 and the number of cores, which is what kpipe's small pipelines need.
"""

from __future__ import annotations

import tensorflow as tf


def prefetched(dataset: tf.data.Dataset) -> tf.data.Dataset:
    """`dataset.prefetch(tf.data.AUTOTUNE)` without tf.data's autotuning model thread (see the module)."""
    options = tf.data.Options()
    options.autotune.enabled = False
    return dataset.prefetch(tf.data.AUTOTUNE).with_options(options)
