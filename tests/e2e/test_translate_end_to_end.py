"""The translate task end to end: learns a reversal task from a CSV, exports a string → string
SavedModel that plain TensorFlow loads, handles bad input, and runs on a CMUdict slice."""

import json
import sys

import numpy as np
import pandas as pd
import pytest
import tensorflow as tf

from kpipe.cli.commands import main
from tests.helpers import kpipe
from tests.made_up_data import SMALL

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def exported(task_run):
    run = task_run("translate")  # the task harness's run (tests/e2e/task_harness.py): 3,000 reversed spellings
    return run.folder, run.export


def test_keeps_the_epoch_that_decodes_the_validation_split_best(exported):
    """g2p-attention watches val_word_error_rate: every epoch's figure is in the history, and the export
    decodes the validation sources with exactly the best of them (its weights are that epoch's)."""
    from kpipe.datasets.pairs import load_pairs
    from kpipe.tasks.named_pipelines import load_pipeline
    from kpipe.evaluation.sequence_metrics import error_rates

    folder, export = exported
    history = json.loads((export / "metrics.json").read_text())["history"]
    rates = [h["val_word_error_rate"] for h in history]
    assert len(rates) >= 2 and all(0 <= r <= 1 for r in rates)
    config = load_pipeline("g2p-attention", [f"data.path={folder / 'pairs.csv'}", "data.source=file"])
    references = load_pairs(config.data).references("validation")
    sources = list(references)
    loaded = tf.saved_model.load(str(export))
    outputs = loaded.translate(tf.constant(sources))["output"].numpy()
    scores = error_rates([o.decode().split() for o in outputs], [[r.split() for r in references[s]] for s in sources])
    averaging = json.loads((export / "metrics.json").read_text())["checkpoint_averaging"]
    best = int(np.argmin(rates)) + 1
    assert averaging["epochs"] == list(range(max(1, best - 2), best + 1))  # the 3 epochs ending at the best
    assert averaging["val_word_error_rate_best_epoch"] == pytest.approx(min(rates))
    # The export holds the better of the best epoch and the average, as the report says.
    chosen = min(averaging["val_word_error_rate_best_epoch"], averaging["val_word_error_rate_averaged"])
    assert averaging["kept"] == ("average" if averaging["val_word_error_rate_averaged"] < min(rates) else "best epoch")
    assert scores["word_error_rate"] == pytest.approx(chosen)


def test_learns_the_task_and_reports_error_rates_and_attention(exported):
    _, export = exported
    metrics = json.loads((export / "metrics.json").read_text())
    assert metrics["word_error_rate"] < 0.2  # 0.0 when measured; untrained it is 1.0
    assert metrics["token_error_rate"] <= metrics["word_error_rate"] + 1e-9
    assert (export / "attention.png").stat().st_size > 10_000


def test_plain_tensorflow_translates_raw_strings_with_attention(exported):
    _, export = exported
    loaded = tf.saved_model.load(str(export))
    long_input = "abcdefgh" * 10  # 80 characters: cut to max_source_length (32)
    result = loaded.translate(tf.constant(["abc", "", "ABC", "ab?z", long_input]))
    outputs = [o.decode() for o in result["output"].numpy()]
    assert outputs[0] == "C B A"
    assert outputs[1] == ""              # empty in, empty out
    assert outputs[2] == "C B A"         # sources are lower-cased, as in training
    assert isinstance(outputs[3], str)   # unseen characters map to the unknown token
    assert result["attention"].shape[0] == 5 and result["attention"].shape[2] == 32
    assert np.isfinite(result["attention"].numpy()).all()
    np.testing.assert_allclose(result["attention"].numpy()[0, :4].sum(-1), 1.0, rtol=1e-4)  # 3 tokens + END


def test_cli_translate_prints_tab_separated_and_json(exported, capsys, monkeypatch):
    folder, export = exported
    run = kpipe("translate", "g2p-attention", "bad", "cafe", cwd=folder)  # the command's real process
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.splitlines() == ["bad\tD A B", "cafe\tE F A C"]
    monkeypatch.chdir(folder)
    assert main(["translate", str(export), "ace", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"input": "ace", "output": "E C A"}


def test_cli_translate_mistakes_are_one_line_exit_2(exported, tmp_path, capsys, monkeypatch):
    folder, _ = exported
    monkeypatch.chdir(folder)
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True)
    assert main(["translate", "g2p-attention"]) == 2
    assert "nothing to translate" in capsys.readouterr().err
    assert main(["translate", "no-such-model", "x"]) == 2
    assert "no exported model" in capsys.readouterr().err


def test_g2p_attention_runs_on_a_slice_of_cmudict(tmp_path, monkeypatch, capsys, caplog):
    monkeypatch.chdir(tmp_path)  # in-process: the fixture runs the real command
    caplog.set_level("INFO")
    assert main(["run", "g2p-attention", "--set", "data.limit=600", "--set", "training.epochs=1", *SMALL]) == 0
    assert "phoneme error rate" in caplog.text and "Test word error rate" in capsys.readouterr().out
    metrics = json.loads((tmp_path / "saved_models" / "g2p-attention" / "1" / "metrics.json").read_text())
    assert metrics["data"]["source"] == "embedded:cmudict" and 0 <= metrics["token_error_rate"]


def test_cli_translate_a_table_to_a_file(exported, monkeypatch, capsys):
    folder, export = exported
    monkeypatch.chdir(folder)
    pd.DataFrame({"word": ["abc", "hgfe"], "n": [1, 2]}).to_csv("words.csv", index=False)
    assert main(["translate", "g2p-attention", "--file", "words.csv", "--column", "word", "--output",
                 "spoken.tsv"]) == 0
    result = pd.read_csv(folder / "spoken.tsv", sep="\t")
    assert list(result.columns) == ["word", "n", "output"]
    from kpipe.tasks.translate.predict import translate_texts

    assert list(result["output"]) == translate_texts(export, ["abc", "hgfe"])
