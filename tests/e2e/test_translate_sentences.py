"""Sentence translation end to end on a small English/Spanish grammar in the Anki format: sub-word vocabularies
fitted on the training split and kept in the export (raw English in, Spanish out, `¿`/`¡`, accents and case
kept), validation BLEU every epoch for early stopping, sacreBLEU and chrF on the test split with every
translation of a sentence as a reference, and one line for the data the pipeline cannot find."""

import json

import pytest
import tensorflow as tf

from kpipe.cli.commands import main
from tests.helpers import kpipe_in_process
from tests.made_up_data import write_english_spanish

pytestmark = pytest.mark.slow
TINY = ["--set", "preprocessing.subword_vocabulary_size=200", "--set", "model.embedding_dim=32",
        "--set", "model.encoder_units=32", "--set", "model.decoder_units=64", "--set", "model.attention_units=32",
        "--set", "training.epochs=15", "--set", "training.batch_size=16", "--set", "training.learning_rate=0.01",
        "--set", "data.validation_fraction=0.1", "--set", "data.test_fraction=0.2",
        "--set", "training.early_stopping_patience=0", "--set", "model.beam_width=2"]
NAME = "translate-eng-spa-attention"


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    folder = tmp_path_factory.mktemp("sentences")
    write_english_spanish(folder / "es.tsv")
    code, printed = kpipe_in_process("run", NAME, "--data", "es.tsv", *TINY, cwd=folder)
    assert code == 0, printed[-3000:]
    assert "Test BLEU" in printed
    return folder, folder / "saved_models" / NAME / "1"


def test_the_report_has_bleu_chrf_the_worst_sentences_and_validation_bleu_per_epoch(exported):
    _, export = exported
    metrics = json.loads((export / "metrics.json").read_text())
    assert metrics["bleu"] > 50 and metrics["chrf"] > 70  # a grammar this small is learnt in 15 epochs
    assert all(0 <= h["val_bleu"] <= 100 for h in metrics["history"]) and len(metrics["history"]) == 15
    worst = metrics["worst_translations"]
    assert worst and worst[0]["sentence_bleu"] == min(w["sentence_bleu"] for w in worst)
    hello = [e for e in worst + metrics["examples"] if e["source"].startswith("Hello")]
    assert all(sorted(e["references"]) == sorted([e["references"][0].replace("Buenas", "Hola"),
                                                  e["references"][0].replace("Hola", "Buenas")]) for e in hello)


def test_the_export_translates_raw_english_into_spanish_punctuation_and_accents(exported):
    _, export = exported
    loaded = tf.saved_model.load(str(export))
    tf.random.set_seed(3)  # the sub-word tables hold no kernel-owned state that reseeding would discard
    outputs = [o.decode() for o in loaded.translate(tf.constant(["Where is the station?", "Hello, Tom!", ""]))
               ["output"].numpy()]
    assert outputs[0].startswith("¿") and outputs[0].endswith("?") and outputs[1].startswith("¡")
    assert outputs[2] == ""


def test_kpipe_translate_answers_from_the_command_line(exported, monkeypatch, capsys):
    folder, _ = exported
    monkeypatch.chdir(folder)  # in-process: the command's real process is tested in test_translate_end_to_end
    assert main(["translate", NAME, "Tom has two cats.", "--json"]) == 0
    row = json.loads(capsys.readouterr().out)
    assert row["input"] == "Tom has two cats." and row["output"].endswith(".")


def test_without_data_one_line_says_where_to_get_it(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["run", NAME]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "spa-eng.tsv.gz; no package carries it: get it from https://www.manythings.org" in err[0]
    assert main(["run", NAME, "--data", "es.tsv", "--set", "evaluation.bleu_sample=0"]) == 2  # val_bleu, never logged
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "'val_bleu' is logged for sentences only" in err[0]
    assert not (tmp_path / "saved_models").exists()


def test_the_transformer_pipeline_learns_the_grammar_and_exports_a_translator(tmp_path):
    write_english_spanish(tmp_path / "es.tsv")
    tiny = ["--set", "preprocessing.subword_vocabulary_size=200", "--set", "model.hidden_dim=32",
            "--set", "model.num_heads=2", "--set", "model.intermediate_dim=64", "--set", "training.epochs=15",
            "--set", "training.batch_size=16", "--set", "training.learning_rate=0.01",
            "--set", 'training.learning_rate_schedule="constant"',  # 4 steps an epoch: no room for a warmup
            "--set", "data.validation_fraction=0.1", "--set", "data.test_fraction=0.2",
            "--set", "training.early_stopping_patience=0", "--set", "model.beam_width=2"]
    code, printed = kpipe_in_process("run", "translate-eng-spa", "--data", "es.tsv", *tiny, cwd=tmp_path)
    assert code == 0, printed[-3000:]
    export = tmp_path / "saved_models" / "translate-eng-spa" / "1"
    metrics = json.loads((export / "metrics.json").read_text())
    assert metrics["bleu"] > 50 and metrics["decoding"] == "beam 2", metrics["bleu"]  # 89 when written
    loaded = tf.saved_model.load(str(export))  # kept: its functions need its variables alive
    outputs = [o.decode() for o in loaded.translate(tf.constant(["Where is the station?", ""]))["output"].numpy()]
    assert outputs[0].startswith("¿") and outputs[0].endswith("?") and outputs[1] == ""
