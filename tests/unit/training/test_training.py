import keras
import numpy as np
import pytest
import tensorflow as tf

from kpipe.training.resume import checkpoints
from kpipe.training.loop import FineTuneSchedule, make_strategy, train_model
from kpipe.config.training import TrainingConfig
from tests.helpers import kill_after


def tiny_data():
    x = np.random.default_rng(0).integers(1, 10, size=(64, 5)).astype("int32")
    y = (x[:, 0] > 5).astype("float32")
    return tf.data.Dataset.from_tensor_slices((x, y)).batch(16)


def build():
    inputs = keras.Input((5,), dtype="int32")
    h = keras.layers.Embedding(10, 4)(inputs)
    h = keras.layers.GlobalAveragePooling1D()(h)
    return keras.Model(inputs, keras.layers.Dense(1, activation="sigmoid")(h))


def test_auto_strategy_on_cpu_is_the_default_strategy():
    if tf.config.list_logical_devices("GPU"):
        pytest.skip("machine has a GPU")
    strategy = make_strategy("auto")
    assert strategy.num_replicas_in_sync == 1
    assert strategy is tf.distribute.get_strategy()


def test_rerun_after_interruption_resumes_from_last_finished_epoch(tmp_path):
    config = TrainingConfig(epochs=4, early_stopping_patience=0)
    kwargs = dict(loss="binary_crossentropy", metrics=["accuracy"], train_data=tiny_data(),
                  validation_data=tiny_data(), config=config, work_dir=tmp_path, strategy=make_strategy("default"))
    with pytest.raises(KeyboardInterrupt):
        train_model(build, extra_callbacks=[kill_after(1)], **kwargs)
    assert [p.name for p in checkpoints(tmp_path / "checkpoints")] == ["epoch-0002"]

    epochs_run = []
    counter = keras.callbacks.LambdaCallback(on_epoch_begin=lambda epoch, logs: epochs_run.append(epoch))
    model, history = train_model(build, extra_callbacks=[counter], **kwargs)
    assert epochs_run == [2, 3]  # resumed, not restarted
    assert len(history) == 4 and all("val_loss" in h and "epoch_seconds" in h for h in history)


def test_same_seed_gives_same_weights(tmp_path):
    def run(folder):
        model, _ = train_model(build, loss="binary_crossentropy", metrics=[], train_data=tiny_data(),
                               validation_data=tiny_data(), config=TrainingConfig(epochs=1, seed=5),
                               work_dir=tmp_path / folder, strategy=make_strategy("default"))
        return model.get_weights()

    for a, b in zip(run("a"), run("b")):
        np.testing.assert_array_equal(a, b)


def test_the_train_step_is_traced_once_per_phase(tmp_path, monkeypatch):
    """The optimizer's and the metrics' variables exist before the first trace, so the step is not traced a
    second time to leave out their creation (tensorflow#48851): one trace per compiled phase."""
    from keras.src.backend.tensorflow.trainer import TensorFlowTrainer

    traces, train_step = [], TensorFlowTrainer.train_step
    monkeypatch.setattr(TensorFlowTrainer, "train_step", lambda self, data: traces.append(1) or train_step(self, data))
    train_model(build, loss="binary_crossentropy", metrics=["accuracy"], train_data=tiny_data(),
                validation_data=tiny_data(), config=TrainingConfig(epochs=2, early_stopping_patience=0),
                work_dir=tmp_path / "one", strategy=make_strategy("default"))
    assert len(traces) == 1
    traces.clear()
    train_model(build_frozen, **fine_tune_kwargs(tmp_path / "two"))
    assert len(traces) == 2


@pytest.mark.parametrize("setting, compiled", [("on", True), ("off", False), ("auto", None)])
def test_jit_compile_on_compiles_the_training_step_with_xla_even_on_cpus(tmp_path, setting, compiled):
    """"auto" is Keras' choice (no XLA on a machine with CPUs only, XLA on GPUs); "on" and "off" decide. The
    weights trained with and without XLA agree to float32 rounding."""
    seen = []
    watch = keras.callbacks.LambdaCallback(on_train_begin=lambda logs: seen.append(watch.model.jit_compile))
    model, _ = train_model(build, loss="binary_crossentropy", metrics=[], train_data=tiny_data(),
                           validation_data=tiny_data(), config=TrainingConfig(epochs=2, seed=5, jit_compile=setting),
                           work_dir=tmp_path / setting, strategy=make_strategy("default"), extra_callbacks=[watch])
    if compiled is None:
        compiled = bool(tf.config.list_logical_devices("GPU"))
    assert seen == [compiled]
    reference, _ = train_model(build, loss="binary_crossentropy", metrics=[], train_data=tiny_data(),
                               validation_data=tiny_data(), config=TrainingConfig(epochs=2, seed=5, jit_compile="off"),
                               work_dir=tmp_path / "reference", strategy=make_strategy("default"))
    for w, ref in zip(model.get_weights(), reference.get_weights(), strict=True):
        np.testing.assert_allclose(w, ref, rtol=1e-4, atol=1e-6)


# === Two-phase fine-tuning ===

def build_frozen():
    inputs = keras.Input((5,), dtype="int32")
    h = keras.layers.Embedding(10, 4, trainable=False, name="embedding")(inputs)
    h = keras.layers.GlobalAveragePooling1D()(h)
    return keras.Model(inputs, keras.layers.Dense(1, activation="sigmoid")(h))


def unfreeze_embedding(model):
    model.get_layer("embedding").trainable = True


class RecordEmbedding(keras.callbacks.Callback):
    """The embedding table and learning rate at the end of each epoch."""

    def __init__(self):
        super().__init__()
        self.tables, self.learning_rates, self.epochs = [], [], []

    def on_train_begin(self, logs=None):
        self.tables.append(("start", self.model.get_layer("embedding").embeddings.numpy().copy()))

    def on_epoch_end(self, epoch, logs=None):
        self.epochs.append(epoch)
        self.tables.append((epoch, self.model.get_layer("embedding").embeddings.numpy().copy()))
        self.learning_rates.append(float(self.model.optimizer.learning_rate.numpy()))


def fine_tune_kwargs(tmp_path):
    return dict(loss="binary_crossentropy", metrics=["accuracy"], train_data=tiny_data(),
                validation_data=tiny_data(), config=TrainingConfig(epochs=4, learning_rate=0.05,
                                                                   early_stopping_patience=0),
                work_dir=tmp_path, strategy=make_strategy("default"),
                fine_tune=FineTuneSchedule(frozen_epochs=2, learning_rate=0.01, unfreeze=unfreeze_embedding))


def test_two_phase_schedule_freezes_then_fine_tunes_at_the_lower_rate(tmp_path):
    recorder = RecordEmbedding()
    model, history = train_model(build_frozen, extra_callbacks=[recorder], **fine_tune_kwargs(tmp_path))
    tables = dict(recorder.tables[1:])  # epoch -> table at its end
    start_phase1, start_phase2 = recorder.tables[0][1], recorder.tables[3][1]
    np.testing.assert_array_equal(start_phase1, tables[0])   # frozen: unchanged by epochs 0 and 1
    np.testing.assert_array_equal(start_phase1, tables[1])
    np.testing.assert_array_equal(start_phase2, tables[1])   # phase 2 starts where phase 1 ended
    assert not np.allclose(tables[1], tables[2]) and not np.allclose(tables[2], tables[3])  # then it moves
    assert recorder.epochs == [0, 1, 2, 3]
    assert recorder.learning_rates == pytest.approx([0.05, 0.05, 0.01, 0.01])
    assert len(history) == 4 and model.get_layer("embedding").trainable


@pytest.mark.slow  # trains twice, killed and resumed
@pytest.mark.parametrize("crash_after", [0, 2], ids=["killed-in-frozen-phase", "killed-in-fine-tuning"])
def test_two_phase_schedule_resumes_after_a_kill(tmp_path, crash_after):
    uninterrupted = RecordEmbedding()
    train_model(build_frozen, extra_callbacks=[uninterrupted], **fine_tune_kwargs(tmp_path / "reference"))

    with pytest.raises(KeyboardInterrupt):
        train_model(build_frozen, extra_callbacks=[kill_after(crash_after)],
                    **fine_tune_kwargs(tmp_path / "run"))
    resumed = RecordEmbedding()
    model, history = train_model(build_frozen, extra_callbacks=[resumed], **fine_tune_kwargs(tmp_path / "run"))
    assert resumed.epochs == list(range(crash_after + 1, 4))  # only the epochs the kill cut off
    assert len(history) == 4
    # The resumed run ends with the same embedding as the run that was never interrupted.
    np.testing.assert_allclose(resumed.tables[-1][1], uninterrupted.tables[-1][1], rtol=1e-5, atol=1e-6)


# === Precision and replicas ===

@pytest.mark.slow  # trains and saves a model
def test_mixed_bfloat16_computes_in_16_bits_keeps_float32_weights_and_outputs(tmp_path):
    from kpipe.families.rnn_classifier.config import RNNClassifierConfig
    from kpipe.families.rnn_classifier.model import build_rnn_classifier

    config = TrainingConfig(epochs=1, precision="mixed_bfloat16", early_stopping_patience=0)
    build_classifier = lambda: build_rnn_classifier(RNNClassifierConfig(vocabulary_size=10, units=(4,)))  # noqa: E731
    model, history = train_model(build_classifier, loss="binary_crossentropy", metrics=[], train_data=tiny_data(),
                                 validation_data=tiny_data(), config=config, work_dir=tmp_path,
                                 strategy=make_strategy("default"))
    assert model.get_layer("bidirectional_0").compute_dtype == "bfloat16"
    assert all(w.dtype == "float32" for w in model.weights)
    assert model.get_layer("probabilities").compute_dtype == "float32"
    assert model(np.ones((2, 5), "int32")).dtype == "float32"
    assert np.isfinite(history[0]["loss"])
    assert keras.config.dtype_policy().name == "float32"  # the global policy is restored afterwards


@pytest.mark.slow
def test_mirrored_strategy_runs_two_replicas_on_two_logical_cpus(tmp_path):
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent("""
        import os
        import tensorflow as tf
        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
        from kpipe.cli.commands import main
        quick = ["run", "sentiment-bilstm", "--strategy", "mirrored", "--set", "data.limit=600",
                 "--set", "training.epochs=1", "--set", "model.units=[8]"]
        # XLA on CPUs compiles for one device: refused before any data is read, nothing written
        assert main([*quick, "--set", 'training.jit_compile="on"']) == 2
        assert not os.listdir(".")
        raise SystemExit(main(quick))
    """)
    run = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    assert ('kpipe: error: training.jit_compile = "on" cannot compile one step for 2 CPU devices; use "auto" or '
            '"off", or --strategy default') in run.stderr.splitlines()
    assert "with MirroredStrategy, 2 replica(s), global batch 128" in run.stderr
    assert (tmp_path / "saved_models" / "sentiment-bilstm" / "1" / "saved_model.pb").is_file()


def test_tpu_strategy_without_a_tpu_is_a_one_line_error():
    from kpipe.errors import ConfigError

    with pytest.raises(ConfigError, match="strategy 'tpu' found no TPU"):
        make_strategy("tpu")


class LogsAFigure(keras.callbacks.Callback):
    """A metric callback: logs a given validation figure per epoch, and keeps each epoch's weights."""

    def __init__(self, values):
        super().__init__()
        self.values, self.weights = values, []

    def on_epoch_end(self, epoch, logs=None):
        logs["val_word_error_rate"] = self.values[epoch]
        self.weights.append([w.copy() for w in self.model.get_weights()])


@pytest.mark.parametrize("monitor, kept_epoch", [("val_word_error_rate", 1), ("val_loss", None)])
def test_early_stopping_keeps_the_epoch_best_by_its_monitor(tmp_path, monitor, kept_epoch):
    """The logged error rate is best after epoch 2 (index 1) while the loss keeps falling: watching it keeps
    epoch 2's weights, and the figure is in the history beside the loss."""
    figures = LogsAFigure([0.5, 0.3, 0.4, 0.45, 0.5])
    config = TrainingConfig(epochs=5, early_stopping_patience=3, early_stopping_monitor=monitor,
                            learning_rate=0.05)
    model, history = train_model(build, loss="binary_crossentropy", metrics=[], train_data=tiny_data(),
                                 validation_data=tiny_data(), config=config, work_dir=tmp_path,
                                 strategy=make_strategy("default"), metric_callbacks=[figures])
    assert [h["val_word_error_rate"] for h in history] == figures.values[:len(history)]
    losses = [h["val_loss"] for h in history]
    assert losses == sorted(losses, reverse=True)  # the loss alone would keep the last epoch
    kept = kept_epoch if kept_epoch is not None else len(history) - 1
    for got, expected in zip(model.get_weights(), figures.weights[kept]):
        np.testing.assert_array_equal(got, expected)


def test_a_monitor_the_task_does_not_log_is_a_config_error():
    from kpipe.errors import ConfigError
    from kpipe.tasks.named_pipelines import load_pipeline

    with pytest.raises(ConfigError, match="early_stopping_monitor='val_word_error_rate' is logged by translate "
                                          "pipelines only, not classify; use 'val_loss'"):
        load_pipeline("sentiment-bilstm", ["training.early_stopping_monitor=val_word_error_rate"])
    assert load_pipeline("g2p-attention", ["training.early_stopping_monitor=val_word_error_rate"])


def test_cosine_schedule_trains_each_epoch_at_its_rate_and_resumes_at_the_same_rates(tmp_path):
    import math

    config = TrainingConfig(epochs=4, early_stopping_patience=0, learning_rate=0.02, learning_rate_schedule="cosine")
    kwargs = dict(loss="binary_crossentropy", metrics=[], train_data=tiny_data(), validation_data=tiny_data(),
                  config=config, strategy=make_strategy("default"))
    seen = []
    rate = keras.callbacks.LambdaCallback(on_epoch_end=lambda epoch, logs: seen.append(
        float(keras.ops.convert_to_numpy(model_holder[0].optimizer.learning_rate))))
    model_holder = []
    grab = keras.callbacks.LambdaCallback(on_train_begin=lambda logs: model_holder.append(grab.model))
    _, history = train_model(build, work_dir=tmp_path / "whole", extra_callbacks=[grab, rate], **kwargs)
    expected = [0.02 * (1 + math.cos(math.pi * e / 4)) / 2 for e in range(4)]  # 0.02, 0.01707, 0.01, 0.00293
    np.testing.assert_allclose(seen, expected, rtol=1e-6)

    with pytest.raises(KeyboardInterrupt):
        train_model(build, work_dir=tmp_path / "killed", extra_callbacks=[kill_after(1)], **kwargs)
    seen.clear()
    model_holder.clear()
    _, resumed = train_model(build, work_dir=tmp_path / "killed", extra_callbacks=[grab, rate], **kwargs)
    np.testing.assert_allclose(seen, expected[2:], rtol=1e-6)  # epochs 3 and 4 at their own rates
    np.testing.assert_allclose([h["loss"] for h in resumed], [h["loss"] for h in history], rtol=1e-5)


def test_a_first_batch_that_does_not_divide_among_replicas_is_split_keeping_every_row_in_order():
    """Keras builds its metrics from the first validation batch averaged across replicas, which fails on
    unequal shares (the mirrored test above hit it with 13 rows on 2 replicas): kpipe splits that batch."""
    from kpipe.training.loop import even_first_batch

    ids = np.arange(26 * 3).reshape(26, 3)
    sizes = [13, 8, 5]
    starts = np.cumsum([0] + sizes)
    batches = tf.data.Dataset.from_generator(
        lambda: ((ids[a:b], ids[a:b, 0]) for a, b in zip(starts, starts[1:])),
        output_signature=(tf.TensorSpec([None, 3], tf.int64), tf.TensorSpec([None], tf.int64)))
    for replicas, expected in [(2, [12, 1, 8, 5]), (4, [12, 1, 8, 5]), (3, [12, 1, 8, 5]), (1, sizes)]:
        out = list(even_first_batch(batches, replicas).as_numpy_iterator())
        assert [len(y) for _, y in out] == expected
        np.testing.assert_array_equal(np.concatenate([x for x, _ in out]), ids)
        np.testing.assert_array_equal(np.concatenate([y for _, y in out]), ids[:, 0])
    single = tf.data.Dataset.from_tensors((ids[:1], ids[:1, 0]))  # fewer rows than replicas: left as it is
    assert [len(y) for _, y in even_first_batch(single, 2).as_numpy_iterator()] == [1]


def test_refit_with_validation_is_a_config_error_outside_forecasting():
    from kpipe.errors import ConfigError
    from kpipe.tasks.named_pipelines import load_pipeline

    with pytest.raises(ConfigError, match="training.refit_with_validation is for forecast pipelines, not classify"):
        load_pipeline("sentiment-bilstm", ["training.refit_with_validation=true"])
    assert load_pipeline("weather-ar", ["training.refit_with_validation=true"]).training.refit_with_validation


@pytest.mark.parametrize("monitor, patience, expected", [("val_loss", 2, 2), ("val_accuracy", 2, 3),
                                                         ("val_loss", 0, 4), ("val_word_error_rate", 2, 4)])
def test_kept_epoch_is_the_one_train_model_keeps(monitor, patience, expected):
    from kpipe.training.loop import kept_epoch

    history = [{"val_loss": 0.5, "val_accuracy": 0.6}, {"val_loss": 0.3, "val_accuracy": 0.7},
               {"val_loss": 0.3, "val_accuracy": 0.8}, {"val_loss": 0.4, "val_accuracy": 0.8}]
    config = TrainingConfig(early_stopping_patience=patience, early_stopping_monitor=monitor)
    # first of equal bests; the last epoch without early stopping or when the monitor was not logged
    assert kept_epoch(history, config) == expected
