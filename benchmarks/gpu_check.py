"""Does kpipe's BiLSTM classifier get cuDNN kernels on this machine's GPU, and how fast is it vs CPU?

Checks, with the model `build_rnn_classifier` makes (Embedding(mask_zero) -> BiLSTM -> Dense):
1. the traced training step contains TensorFlow's cuDNN RNN op (`CudnnRNN*`) when the batch is
   right-padded, as kpipe pads (`padding="post"`) — Keras falls back to a slow loop otherwise;
2. a left-padded batch is refused by Keras' cuDNN mask check (why kpipe pads on the right);
3. training throughput (examples/s) on CPU and on the GPU, same model, same batches.

The batches are random token ids with review-like lengths (60-200 tokens, post-padded to 200):
speed depends on shapes, not on which words they are. Without a GPU it reports CPU figures and
says that no cuDNN kernel could be checked.

Usage: python benchmarks/gpu_check.py [--batch 64] [--steps 30]
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from kpipe.families.rnn_classifier.config import RNNClassifierConfig  # noqa: E402
from kpipe.families.rnn_classifier.model import build_rnn_classifier  # noqa: E402

VOCABULARY, MAX_LENGTH = 20000, 200


def batch(size: int, seed: int, pre_padded: bool = False) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    lengths = rng.integers(60, MAX_LENGTH + 1, size)
    ids = [rng.integers(1, VOCABULARY, n) for n in lengths]
    x = keras.utils.pad_sequences(ids, maxlen=MAX_LENGTH, padding="pre" if pre_padded else "post")
    return x.astype("int32"), rng.integers(0, 2, size).astype("float32")


def make_train_step(model: keras.Model, optimizer: keras.optimizers.Optimizer):
    loss_fn = keras.losses.BinaryCrossentropy()

    @tf.function
    def train_step(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True)[:, 0])
        optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
        return loss

    return train_step


def op_types(concrete_function) -> set[str]:
    """Every op type in a traced function, including those inside nested functions."""
    graph_def = concrete_function.graph.as_graph_def()
    types = {node.op for node in graph_def.node}
    for function in graph_def.library.function:
        types |= {node.op for node in function.node_def}
    return types


def measure(device: str, batch_size: int, steps: int) -> dict:
    with tf.device(device):
        keras.utils.set_random_seed(0)
        model = build_rnn_classifier(RNNClassifierConfig(vocabulary_size=VOCABULARY, embedding_dim=128,
                                                         units=(64,), bidirectional=True))
        train_step = make_train_step(model, keras.optimizers.Adam(1e-3))
        x, y = batch(batch_size, 0)
        ops = op_types(train_step.get_concrete_function(tf.constant(x), tf.constant(y)))
        train_step(x, y)  # warm-up
        batches = [batch(batch_size, seed) for seed in range(1, steps + 1)]
        started = time.perf_counter()
        for bx, by in batches:
            loss = train_step(bx, by)
        float(loss)  # wait for the device
        seconds = time.perf_counter() - started
        result = {"device": device, "examples_per_s": steps * batch_size / seconds,
                  "cudnn_ops": sorted(t for t in ops if t.startswith("CudnnRNN"))}
        if device.startswith("/GPU"):
            try:
                train_step(*batch(batch_size, 99, pre_padded=True))
                result["left_padding"] = "accepted (unexpected)"
            except tf.errors.InvalidArgumentError as error:
                result["left_padding"] = "refused: " + str(error).split("\n")[0][:120]
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()
    gpus = tf.config.list_logical_devices("GPU")
    print(f"TensorFlow {tf.__version__}, Keras {keras.__version__}; GPUs: {[g.name for g in gpus] or 'none'}")
    results = [measure("/CPU:0", args.batch, args.steps)] + [measure("/GPU:0", args.batch, args.steps)] * bool(gpus)
    for r in results:
        print(f"{r['device']}: {r['examples_per_s']:,.0f} examples/s (batch {args.batch}, {args.steps} steps); "
              f"cuDNN ops in the training step: {r['cudnn_ops'] or 'none'}"
              + (f"; left-padded batch {r['left_padding']}" if "left_padding" in r else ""))
    if len(results) == 2:
        print(f"GPU / CPU: {results[1]['examples_per_s'] / results[0]['examples_per_s']:.1f}x")
    else:
        print("No GPU here: the cuDNN kernels could not be checked.")


if __name__ == "__main__":
    main()
