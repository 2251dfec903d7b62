"""sentiment-minilm end to end on a tiny checkpoint made here: train, export on raw strings, predict and
embed through the real commands; the export answers as the in-process model does; a preset that is not
on the machine stops before training, with nothing written."""

import json
import os
from unittest import mock

import numpy as np
import pytest
import tensorflow as tf

from kpipe.cli.commands import main
from tests.checkpoints import write_hugging_face_checkpoint
from tests.helpers import OFFLINE, kpipe, kpipe_in_process

pytestmark = pytest.mark.slow
TEXTS = ["great crew thanks", "terrible delay, awful", "the flight was fine", "",
         "the flight was late and the crew was rude and the food was cold and my bag was lost again, never again"]
# head_tail: the long text above is cut to its first 5 and last 17 word pieces, in training and in the export
TINY = ["--set", "data.limit=200", "--set", "preprocessing.sequence_length=24", "--set", "training.batch_size=16",
        "--set", 'preprocessing.truncating="head_tail"']


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    folder = tmp_path_factory.mktemp("minilm")
    write_hugging_face_checkpoint(folder / "checkpoint")
    # two_phase: one epoch of the head alone, then one of everything (the schedule itself: tests/unit/pretrained)
    with mock.patch.dict(os.environ, OFFLINE):  # in-process: the real command's runs are the tests below
        code, printed = kpipe_in_process(*RUN, cwd=folder)
    assert code == 0
    return folder, printed


RUN = ["run", "sentiment-minilm", "--set", "model.preset=checkpoint", "--set", 'model.backbone_training="two_phase"',
       "--set", "training.epochs=2", *TINY]


def test_the_run_reports_the_encoder_beside_the_baseline_and_exports_both_signatures(trained):
    folder, printed = trained
    assert "tfidf + logistic regression" in printed and "Exported to saved_models/sentiment-minilm/1" in printed
    export = folder / "saved_models" / "sentiment-minilm" / "1"
    metrics = json.loads((export / "metrics.json").read_text())
    assert metrics["pretrained"]["format"] == "hugging face" and metrics["pretrained"]["backbone"] == "BertBackbone"
    assert metrics["data"]["train"] == 160 and "accuracy" in metrics["baseline"]
    assert metrics["epochs_trained"] == 2 and metrics["pretrained"]["backbone_training"] == "two_phase"
    manifest = json.loads((export / "kpipe.json").read_text())
    assert manifest["family"] == "pretrained_classifier" and set(manifest["signatures"]) == {"serve", "embed"}


def test_the_export_gives_the_in_process_models_probabilities_and_embeddings(trained):
    import keras_hub  # noqa: F401  (registers the backbone for model.keras)

    import kpipe
    from kpipe.families.pretrained_classifier import model as classifier
    from kpipe.pretrained import inputs, presets

    folder, _ = trained
    export = folder / "saved_models" / "sentiment-minilm" / "1"
    model = kpipe.load_keras_model(export)
    preprocessor = inputs.with_truncation(presets.load_preprocessor(str(folder / "checkpoint"), 24), "head_tail")
    x = inputs.encode(preprocessor, tf.constant(TEXTS))
    assert x["padding_mask"].numpy()[-1].all()  # the long text fills all 24 positions
    loaded = tf.saved_model.load(str(export))
    np.testing.assert_allclose(loaded.serve(tf.constant(TEXTS))["probabilities"].numpy(),
                               model(x, training=False).numpy(), atol=1e-5)
    np.testing.assert_allclose(loaded.embed(tf.constant(TEXTS))["embedding"].numpy(),
                               classifier.embedding_model(model)(x).numpy(), atol=1e-5)


def test_predict_and_embed_commands_read_the_export(trained, monkeypatch, capsys):
    folder, _ = trained
    monkeypatch.chdir(folder)  # `kpipe predict` in-process (it has subprocess tests elsewhere), `kpipe embed` not
    assert main(["predict", "sentiment-minilm", *TEXTS[:2], "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["text"] for r in rows] == TEXTS[:2] and all(r["label"] in ("negative", "neutral", "positive")
                                                          for r in rows)
    run = kpipe("embed", "sentiment-minilm", "great crew", "--json", cwd=folder)
    assert run.returncode == 0, run.stderr[-2000:]
    assert len(json.loads(run.stdout)["embedding"]) == 16


def test_a_preset_that_is_not_downloaded_stops_before_training_and_writes_nothing(tmp_path):
    run = kpipe("run", "sentiment-minilm", *TINY, cwd=tmp_path, env={**os.environ, **OFFLINE}, timeout=300)
    assert run.returncode == 2
    lines = run.stderr.strip().splitlines()
    assert "Traceback" not in run.stderr and lines[-1].startswith("kpipe: error: the pretrained model "
                                                                  "'all_minilm_l6_v2_en' is not downloaded")
    assert "--set model.preset=/path/to/checkpoint" in lines[-1] and "kagglehub" in lines[-1]
    assert list(tmp_path.iterdir()) == []


def test_an_ensembles_missing_preset_stops_the_run_before_its_ngram_member_trains(tmp_path, capsys):
    with mock.patch.dict(os.environ, OFFLINE):  # in-process: the test above runs the real command
        code, printed = kpipe_in_process("run", "sentiment-minilm-ensemble", *TINY, cwd=tmp_path)
    assert code == 2 and printed == ""
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert line.startswith("kpipe: error: the pretrained model 'all_minilm_l6_v2_en' is not downloaded")
    assert "--set model.sequence.preset=/path/to/checkpoint" in line
    assert list(tmp_path.iterdir()) == []


def test_a_fine_tune_stopped_after_its_head_phase_resumes_to_the_uninterrupted_result(trained, tmp_path, monkeypatch,
                                                                                      caplog):
    """Interrupted (Ctrl-C) once epoch 1 (the head alone) is saved; the rerun trains epoch 2 (everything) from there
    and ends with the uninterrupted run's weights and figures. In-process, interrupted right after the checkpoint's
    write: a SIGKILL of the real command is tests/e2e/test_runs.py's (a rerun reads the same checkpoint however the
    process ended)."""
    import keras_hub  # noqa: F401  (registers the backbone for model.keras)

    import kpipe
    from kpipe.training.resume import EpochCheckpoint

    reference, _ = trained
    write_hugging_face_checkpoint(tmp_path / "checkpoint")
    monkeypatch.chdir(tmp_path)
    saved = EpochCheckpoint.on_epoch_end

    def stopped_after_epoch_1(self, epoch, logs=None):
        saved(self, epoch, logs)
        raise KeyboardInterrupt

    monkeypatch.setattr(EpochCheckpoint, "on_epoch_end", stopped_after_epoch_1)
    with mock.patch.dict(os.environ, OFFLINE):
        assert main(RUN) == 130  # "kpipe: interrupted; rerun the same command to resume ..."
    work = tmp_path / "saved_models" / "sentiment-minilm" / ".work"
    assert [p.name for p in work.rglob("epoch-*")] == ["epoch-0001"]
    assert not (tmp_path / "saved_models" / "sentiment-minilm" / "1").exists()
    monkeypatch.setattr(EpochCheckpoint, "on_epoch_end", saved)
    caplog.set_level("INFO")
    with mock.patch.dict(os.environ, OFFLINE):
        assert main(RUN) == 0
    assert "Resuming after epoch 1" in caplog.text
    exports = [folder / "saved_models" / "sentiment-minilm" / "1" for folder in (reference, tmp_path)]
    resumed, uninterrupted = (json.loads((e / "metrics.json").read_text()) for e in exports)
    for row, ref_row in zip(resumed["history"], uninterrupted["history"], strict=True):
        assert {k: v for k, v in row.items() if k != "epoch_seconds"} == pytest.approx(
            {k: v for k, v in ref_row.items() if k != "epoch_seconds"}, rel=1e-5)
    assert resumed["accuracy"] == uninterrupted["accuracy"]
    for w, ref_w in zip(*(kpipe.load_keras_model(e).get_weights() for e in exports), strict=True):
        np.testing.assert_allclose(w, ref_w, rtol=1e-5, atol=1e-6)


def test_a_portable_export_answers_as_the_savedmodel_with_word_pieces_in_numpy(trained):
    """The fine-tuned encoder as ONNX and LiteRT, its WordPiece tokenizer and packer in NumPy (the long text cut
    head and tail, as in training). The portable networks compute in float32: ONNX (each batch padded to its
    longest text) and LiteRT (every text padded to the sequence length) agree within 1e-4; the SavedModel computes
    as the run trained, in bfloat16 on CPUs with bfloat16 units (precision "auto"), so they agree with it within
    bfloat16's rounding, and on every label."""
    import keras_hub  # noqa: F401  (registers the backbone for model.keras)

    from kpipe.exports.portable import export_portable
    from kpipe.portable.runtime import PortableClassifier

    folder, _ = trained
    export = folder / "saved_models" / "sentiment-minilm" / "1"
    loaded = tf.saved_model.load(str(export))
    expected = loaded.serve(tf.constant(TEXTS))["probabilities"].numpy()
    found = {fmt: PortableClassifier.open(export_portable(export, fmt)).probabilities(TEXTS)
             for fmt in ("onnx", "litert")}
    np.testing.assert_allclose(found["onnx"], found["litert"], atol=1e-4)
    from kpipe.training.precision import resolve_precision

    bfloat16 = resolve_precision("auto") == "mixed_bfloat16"  # the precision the run trained and exported in
    np.testing.assert_allclose(found["onnx"], expected, atol=1e-2 if bfloat16 else 1e-4)
    np.testing.assert_array_equal(found["onnx"].argmax(axis=1), expected.argmax(axis=1))
