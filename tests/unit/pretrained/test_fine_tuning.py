"""Fine-tuning schedules through kpipe's training loop on a tiny checkpoint: two_phase trains the head alone,
then everything; LoRA changes the attention's query and value kernels by a low-rank update and nothing else of
the backbone, in the saved model.keras too."""

import keras
import numpy as np
import pytest

from kpipe.config.training import TrainingConfig
from kpipe.families.pretrained_classifier.config import PretrainedClassifierConfig
from kpipe.families.pretrained_classifier import model as classifier
from kpipe.pretrained import inputs, presets
from kpipe.training.loop import FineTuneSchedule, make_strategy, train_model
from tests.checkpoints import write_keras_hub_preset
from tests.made_up_data import synthetic_reviews

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    folder = tmp_path_factory.mktemp("preset") / "tiny"
    original = write_keras_hub_preset(folder)
    reviews = synthetic_reviews(96)
    preprocessor = presets.load_preprocessor(str(folder), 16)
    data = inputs.make_pretrained_dataset(reviews.text.to_numpy(), reviews.label.to_numpy(), preprocessor,
                                          batch_size=16, shuffle=True, seed=1)
    return str(folder), {w.path: w.numpy() for w in original.weights}, data


def fit(setup, tmp_path, fine_tune=None, **options):
    preset, _, data = setup
    config = PretrainedClassifierConfig(preset=preset, num_classes=2, **options)
    training = TrainingConfig(epochs=2, optimizer="adamw", learning_rate=1e-3, learning_rate_schedule="linear_warmup",
                              early_stopping_patience=0)
    return train_model(lambda: classifier.build_pretrained_classifier(config, presets.load_backbone(preset)),
                       loss="binary_crossentropy", metrics=["accuracy"], train_data=data, validation_data=data,
                       config=training, work_dir=tmp_path, strategy=make_strategy("default"), fine_tune=fine_tune)


def backbone_weights(model):
    return {w.path: w.numpy() for w in classifier.backbone_of(model).weights}


def test_two_phase_trains_the_head_first_then_the_encoder(setup, tmp_path):
    _, original, _ = setup
    phase_one = {}

    class Snapshot(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            if epoch == 0:
                phase_one.update(backbone_weights(self.model))

    schedule = FineTuneSchedule(1, 1e-3, unfreeze=classifier.unfreeze_backbone)
    preset, _, data = setup
    config = PretrainedClassifierConfig(preset=preset, num_classes=2, backbone_training="two_phase")
    model, history = train_model(
        lambda: classifier.build_pretrained_classifier(config, presets.load_backbone(preset)),
        loss="binary_crossentropy", metrics=["accuracy"], train_data=data, validation_data=data,
        config=TrainingConfig(epochs=2, early_stopping_patience=0), work_dir=tmp_path,
        strategy=make_strategy("default"), fine_tune=schedule, extra_callbacks=[Snapshot()])
    assert len(history) == 2
    kernel = "transformer_layer_0/self_attention_layer/query/kernel"
    np.testing.assert_array_equal(phase_one[kernel], original[kernel])  # frozen in phase 1
    assert not np.allclose(backbone_weights(model)[kernel], original[kernel])  # trained in phase 2
    np.testing.assert_array_equal(backbone_weights(model)["pooled_dense/kernel"], original["pooled_dense/kernel"])


def test_lora_changes_query_and_value_by_a_low_rank_update_only(setup, tmp_path):
    _, original, _ = setup
    model, _ = fit(setup, tmp_path / "work", backbone_training="lora", lora_rank=2)
    model.save(tmp_path / "model.keras")  # Keras merges the adapters into the kernels when it saves
    import keras_hub  # noqa: F401  (registers the backbone)

    tuned = backbone_weights(keras.saving.load_model(tmp_path / "model.keras", compile=False))
    for path, value in original.items():
        change = (tuned[path] - value).reshape(value.shape[0], -1) if value.ndim > 1 else tuned[path] - value
        if path.endswith(("query/kernel", "value/kernel")):
            singular = np.linalg.svd(change, compute_uv=False)
            # rank 2 per head on 2 heads: rank 4 at most (a full fine-tune changes all 16 directions)
            assert singular[0] > 1e-6 and np.all(singular[4:] < 1e-3 * singular[0]), (path, singular)
        elif not path.endswith(("query/bias", "value/bias")):
            np.testing.assert_array_equal(change, 0, err_msg=path)
