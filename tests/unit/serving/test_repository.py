"""The served versions while folders change under the server: a broken, vanished or republished version never
stops the server or another model's refresh; the newest good version serves, and a fixed one is picked up."""

import json
import logging
import shutil

import pytest

from kpipe.errors import KpipeError
from kpipe.serving.repository import ModelRepository, ServedModel, parse_model_argument


def write_tiny_savedmodel(path, factor: float):
    import tensorflow as tf

    class Scale(tf.Module):
        def __init__(self):
            self.factor = tf.Variable(factor)

        @tf.function(input_signature=[tf.TensorSpec([None], tf.float32, name="x")])
        def serve(self, x):
            return {"y": x * self.factor}

    module = Scale()
    tf.saved_model.save(module, str(path), signatures={"serving_default": module.serve})
    (path / "kpipe.json").write_text(json.dumps({"format": 1, "pipeline": "tiny", "task": "classify"}))


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """Two SavedModels (y = 2x and y = 3x) to copy into folders of versions."""
    root = tmp_path_factory.mktemp("tiny")
    for factor in (2, 3):
        write_tiny_savedmodel(root / str(factor), float(factor))
    return root


def publish(tiny, root, version: int, factor: int):
    shutil.copytree(tiny / str(factor), root / f".tmp-{version}")
    (root / f".tmp-{version}").rename(root / str(version))  # in one rename, as kpipe run publishes
    return root / str(version)


def answer(model: ServedModel) -> float:
    import numpy as np

    return float(model.current.signatures["serving_default"]({"x": np.array([1.0], np.float32)})["y"][0])


def warnings_in(caplog):
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


def test_a_corrupt_manifest_is_skipped_once_and_picked_up_when_fixed(tiny, tmp_path, caplog):
    root = tmp_path / "m"
    root.mkdir()
    publish(tiny, root, 1, 2)
    repository = ModelRepository([ServedModel("m", root, follows_latest=True)])
    model = repository.models["m"]
    broken = publish(tiny, root, 2, 3)
    (broken / "kpipe.json").write_text("{not json")
    with caplog.at_level(logging.INFO):
        for _ in range(3):
            repository.poll()
    assert model.current.version == 1 and answer(model) == 2.0
    assert len(warnings_in(caplog)) == 1 and "kpipe.json" in warnings_in(caplog)[0]  # once, not every poll
    (broken / "kpipe.json").write_text(json.dumps({"format": 1, "pipeline": "tiny", "task": "classify"}))
    repository.poll()
    assert model.current.version == 2 and answer(model) == 3.0


def test_an_emptied_or_vanished_folder_keeps_the_served_version_and_the_other_models_refreshing(tiny, tmp_path,
                                                                                                   caplog):
    gone, other = tmp_path / "gone", tmp_path / "other"
    for root in (gone, other):
        root.mkdir()
        publish(tiny, root, 1, 2)
    repository = ModelRepository([ServedModel("gone", gone, follows_latest=True),
                                  ServedModel("other", other, follows_latest=True)])
    shutil.rmtree(gone / "1")  # emptied: versions() is [] (used to be an IndexError)
    publish(tiny, other, 2, 3)
    with caplog.at_level(logging.INFO):
        repository.poll()
        repository.poll()
    assert repository.models["gone"].current.version == 1 and answer(repository.models["gone"]) == 2.0
    assert repository.models["other"].current.version == 2  # refreshed although the model before it failed
    assert len([m for m in warnings_in(caplog) if "no versions left" in m]) == 1
    shutil.rmtree(gone)  # the whole folder vanished
    publish(tiny, other, 3, 2)
    repository.poll()
    assert repository.models["other"].current.version == 3 and answer(repository.models["gone"]) == 2.0


def test_start_up_serves_the_newest_good_version_when_the_latest_is_broken(tiny, tmp_path):
    root = tmp_path / "m"
    root.mkdir()
    publish(tiny, root, 1, 2)
    broken = publish(tiny, root, 2, 3)
    (broken / "saved_model.pb").write_bytes(b"not a SavedModel")
    repository = ModelRepository([ServedModel("m", root, follows_latest=True)])
    assert repository.models["m"].current.version == 1
    (root / "1" / "saved_model.pb").write_bytes(b"broken too")
    with pytest.raises(KpipeError, match="cannot load the SavedModel in .*2"):  # none loads: the newest's error
        ModelRepository([ServedModel("m", root, follows_latest=True)])


def test_a_version_deleted_and_published_again_under_its_number_is_reloaded(tiny, tmp_path):
    root = tmp_path / "m"
    root.mkdir()
    publish(tiny, root, 1, 2)
    repository = ModelRepository([ServedModel("m", root, follows_latest=True)])
    shutil.rmtree(root / "1")
    publish(tiny, root, 1, 3)
    repository.poll()
    assert answer(repository.models["m"]) == 3.0


def test_a_path_holding_an_equals_sign_can_be_served(tiny, tmp_path):
    folder = tmp_path / "runs" / "lr=0.01"
    folder.mkdir(parents=True)
    publish(tiny, folder, 1, 2)
    assert parse_model_argument(str(folder), tmp_path).root == folder
    named = parse_model_argument(f"fast={folder}", tmp_path)
    assert (named.name, named.root) == ("fast", folder)


def test_removing_the_newest_version_rolls_back_to_the_previous_one(tiny, tmp_path, caplog):
    """Reliability review round 5, finding 12: the served version's folder deleted used to keep serving it from
    memory until a restart; TF Serving goes back to the newest version left."""
    root = tmp_path / "m"
    root.mkdir()
    publish(tiny, root, 1, 2)
    publish(tiny, root, 2, 3)
    repository = ModelRepository([ServedModel("m", root, follows_latest=True)])
    model = repository.models["m"]
    assert model.current.version == 2 and answer(model) == 3.0
    shutil.rmtree(root / "2")
    repository.poll()
    assert model.current.version == 1 and answer(model) == 2.0
    publish(tiny, root, 3, 3)
    repository.poll()
    assert model.current.version == 3


def test_a_version_polled_while_it_is_still_being_copied_in_is_loaded_once_complete(tiny, tmp_path):
    """Finding 12's second half: `cp -r` or `rsync` writes the variables after saved_model.pb; a poll in between
    failed the version for good."""
    root = tmp_path / "m"
    root.mkdir()
    publish(tiny, root, 1, 2)
    repository = ModelRepository([ServedModel("m", root, follows_latest=True)])
    model = repository.models["m"]
    shutil.copytree(tiny / "3", root / "2")  # copied in place, not renamed in: the variables still half-written
    data = next((root / "2" / "variables").glob("variables.data-*"))
    complete = data.read_bytes()
    data.write_bytes(complete[: len(complete) // 2])
    repository.poll()
    assert model.current.version == 1 and answer(model) == 2.0
    data.write_bytes(complete)  # the copy finishes
    repository.poll()
    assert model.current.version == 2 and answer(model) == 3.0


def test_serving_default_aliasing_an_endpoint_is_one_signature_with_one_set_of_lanes(tmp_path):
    """Reliability review round 5, finding 11 (its alias half): Keras' ExportArchive names its first endpoint
    serving_default too; the server gave each name its own batcher, so two bulk lanes per model."""
    import asyncio
    import types

    import tensorflow as tf

    from kpipe.exports import manifest
    from kpipe.exports.saved_model import write_saved_model
    from kpipe.serving.app import ModelServer, ServeOptions
    from kpipe.serving.repository import load_version

    doubling = tf.function(lambda x: {"y": x * 2}, input_signature=[tf.TensorSpec([None], tf.float32, name="x")])
    tripling = tf.function(lambda x: {"z": x * 3}, input_signature=[tf.TensorSpec([None], tf.float32, name="x")])
    path = tmp_path / "1"
    write_saved_model(path, tracked=[], endpoints={"serve": doubling, "embed": tripling})  # "embed" sorts first
    manifest.update(path, pipeline="tiny", task="classify")
    loaded = load_version(path)
    assert set(loaded.signatures) == {"serve", "embed", "serving_default"}
    assert loaded.signatures["serving_default"] is loaded.signatures["serve"]
    model = types.SimpleNamespace(name="m", current=loaded)
    server = ModelServer(types.SimpleNamespace(models={"m": model}), ServeOptions())

    async def batchers():
        return server.batcher("m", loaded, "serve"), server.batcher("m", loaded, "serving_default")

    first, second = asyncio.run(batchers())
    assert first is second and len(server.batchers) == 1


def test_an_export_can_ask_for_a_smaller_warm_up(tiny, tmp_path, monkeypatch):
    """A language model's manifest asks for one row: warming its generating signatures up with 256 rows cost
    seconds of start-up."""
    from kpipe.serving import signatures as signature_module
    from kpipe.serving.repository import load_version

    asked = []
    monkeypatch.setattr(signature_module.Signature, "warm_up", lambda self, rows: asked.append(rows))
    path = publish(tiny, tmp_path, 1, 2)
    load_version(path, warm_up_rows=256)
    manifest = json.loads((path / "kpipe.json").read_text())
    (path / "kpipe.json").write_text(json.dumps({**manifest, "warm_up_rows": 1}))
    load_version(path, warm_up_rows=256)
    assert asked == [256, 1]
