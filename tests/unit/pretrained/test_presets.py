"""Loading pretrained encoders: both checkpoint formats load through keras-hub with their weights, and a
preset that is not on this machine stops with one line that says what to do."""

import json

import numpy as np
import pytest
import requests

from kpipe.cli.commands import main
from kpipe.errors import ConfigError
from kpipe.pretrained import presets
from tests.checkpoints import VOCABULARY, write_hugging_face_checkpoint, write_keras_hub_preset

TEXTS = ["good movie", "The flight crew was TERRIBLE and boring", "zzz"]


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    folder = tmp_path_factory.mktemp("checkpoints")
    return {"keras-hub": (folder / "kh", write_keras_hub_preset(folder / "kh", seed=1)),
            "hugging face": (folder / "hf", write_hugging_face_checkpoint(folder / "hf", seed=2))}


@pytest.mark.parametrize("kind", ["keras-hub", "hugging face"])
def test_a_checkpoint_folder_loads_with_its_weights_and_its_tokenizer(checkpoints, kind):
    import keras

    folder, written = checkpoints[kind]
    preprocessor = presets.load_preprocessor(str(folder), sequence_length=12)
    inputs = preprocessor(TEXTS)
    ids = np.asarray(inputs["token_ids"])
    # [CLS] good movie [SEP], lower-cased, padded; an unknown word splits into characters
    assert ids[0, :4].tolist() == [2, VOCABULARY.index("good"), VOCABULARY.index("movie"), 3] and ids[0, 4] == 0
    assert VOCABULARY.index("terrible") in ids[1]
    loaded = presets.load_backbone(str(folder))
    expected = keras.ops.convert_to_numpy(written(inputs)["sequence_output"])
    np.testing.assert_allclose(keras.ops.convert_to_numpy(loaded(inputs)["sequence_output"]), expected, atol=1e-6)
    # the weights are the checkpoint's, not a fresh initialisation: another seed gives other outputs
    other = checkpoints["hugging face" if kind == "keras-hub" else "keras-hub"][1]
    assert not np.allclose(keras.ops.convert_to_numpy(other(inputs)["sequence_output"]), expected, atol=1e-3)
    assert presets.describe(str(folder))["format"] == kind


def test_a_preset_that_cannot_be_downloaded_says_where_the_cache_is_and_how_to_point_at_a_folder(monkeypatch):
    import keras_hub

    def offline(*args, **kwargs):
        raise requests.ConnectionError("Failed to resolve 'api.kaggle.com'")

    monkeypatch.setattr(keras_hub.models.Backbone, "from_preset", offline)
    with pytest.raises(presets.PresetUnavailableError) as raised:
        presets.load_backbone("bert_tiny_en_uncased")
    message = str(raised.value)
    assert "\n" not in message and "'bert_tiny_en_uncased' is not downloaded" in message
    assert str(presets.cache_folder("bert_tiny_en_uncased")) in message
    assert "--set model.preset=/path/to/checkpoint" in message


def test_which_presets_download():
    assert presets.needs_download("all_minilm_l6_v2_en") and presets.needs_download("hf://org/model")
    assert not presets.needs_download("/models/minilm") and not presets.needs_download("./minilm")


def test_a_local_preset_is_checked_before_tensorflow_loads(tmp_path):
    with pytest.raises(ConfigError, match=r"folder .*missing does not exist"):
        presets.check_preset(str(tmp_path / "missing"))
    with pytest.raises(ConfigError, match=r"has no config.json: not a keras-hub preset nor a Hugging Face"):
        presets.check_preset(str(tmp_path))
    presets.check_preset("all_minilm_l6_v2_en")  # a name: checked when it loads


def hugging_face_folder(folder, model_type="bert", weights="model.safetensors", positions=512):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps({"model_type": model_type, "max_position_embeddings": positions}))
    (folder / weights).write_bytes(b"")
    return folder


def keras_hub_folder(folder, positions):
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"class_name": "BertBackbone",
                                                    "config": {"max_sequence_length": positions}}))
    return folder


@pytest.mark.parametrize("make, overrides, message", [
    (lambda d: hugging_face_folder(d, "gpt2"), [],
     "holds a 'gpt2' checkpoint, which kpipe cannot fine-tune from Hugging Face format; keras-hub converts these "
     "text encoders: albert, bert, distilbert, roberta, xlm-roberta"),
    (lambda d: hugging_face_folder(d, weights="pytorch_model.bin"), [],
     "has PyTorch weights (pytorch_model.bin) only, and keras-hub reads safetensors; convert them once with: "
     "python -c \"from transformers import AutoModel;"),
    (lambda d: hugging_face_folder(d, positions=64), ["--set", "preprocessing.sequence_length=65"],
     "preprocessing.sequence_length=65 is more than the 64 tokens the checkpoint in"),
    (lambda d: hugging_face_folder(d, "roberta", positions=66), ["--set", "preprocessing.sequence_length=65"],
     "is more than the 64 tokens"),  # RoBERTa keeps two positions after its padding id
    (lambda d: keras_hub_folder(d, positions=32), [],
     "preprocessing.sequence_length=64 is more than the 32 tokens"),
], ids=["not-a-text-encoder", "pytorch-weights-only", "too-long", "roberta-too-long", "keras-hub-too-long"])
@pytest.mark.parametrize("pipeline", ["sentiment-minilm", "minilm-embeddings"])
def test_a_checkpoint_kpipe_cannot_use_is_one_line_exit_2_and_nothing_written(tmp_path, monkeypatch, capsys, make,
                                                                              overrides, message, pipeline):
    monkeypatch.chdir(tmp_path)
    make(tmp_path / "checkpoint")
    length = [] if overrides else ["--set", "preprocessing.sequence_length=64"]
    assert main(["run", pipeline, "--set", "model.preset=checkpoint", *length, *overrides]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err
    assert not (tmp_path / "saved_models").exists()


def test_an_ensembles_checkpoint_mistake_names_the_members_key(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    hugging_face_folder(tmp_path / "checkpoint", "gpt2")
    assert main(["run", "sentiment-minilm-ensemble", "--set", "model.sequence.preset=checkpoint"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("kpipe: error: model.sequence.preset folder checkpoint holds a 'gpt2' "
                                               "checkpoint"), err
    assert not (tmp_path / "saved_models").exists()
