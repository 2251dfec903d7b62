"""Translate ensembles end to end (`model.ensemble_members`): members chosen on validation, one SavedModel
decoding with all of them, and a run killed between members resuming to the same ensemble."""

import json

import pytest
import tensorflow as tf

from tests.helpers import kpipe_in_process
from tests.made_up_data import SMALL, write_reversal_pairs

pytestmark = pytest.mark.slow

ENSEMBLE = ["training.epochs=3", "training.learning_rate=0.01", "model.ensemble_members=2"]


@pytest.fixture(scope="module")
def ensemble_exported(tmp_path_factory):
    """Two members trained for three epochs on the reversal task: imperfect, so they disagree, and the two
    together decode the validation words better than the better one alone (50.0 vs 60.6 % WER, measured)."""
    folder = tmp_path_factory.mktemp("translate_ensemble")
    write_reversal_pairs(folder / "pairs.csv", 2000, seed=1)
    assert kpipe_in_process("run", "g2p-attention", "--data", "pairs.csv",
                            *[a for o in ENSEMBLE for a in ("--set", o)], *SMALL, cwd=folder)[0] == 0
    return folder, folder / "saved_models" / "g2p-attention" / "1"


def test_ensemble_keeps_the_members_that_decode_the_validation_split_best(ensemble_exported):
    """Each member has its own seed and history; the run keeps the k best (k chosen on validation), and the
    export, and its members reloaded from their .keras files and decoding together, give exactly that WER."""
    from kpipe.datasets.pairs import load_pairs
    from kpipe.tasks.named_pipelines import load_pipeline
    from kpipe.preprocessing.token_pairs import TokenTable
    from kpipe.evaluation.sequence_metrics import error_rates
    from kpipe.portable.export_files import TRANSLATOR_FILE
    from kpipe.tasks.translate.signatures import Translator, load_members, translate_batches

    folder, export = ensemble_exported
    metrics = json.loads((export / "metrics.json").read_text())
    ensemble = metrics["ensemble"]
    assert [m["seed"] for m in ensemble["members"]] == [1337, 1338]
    assert sorted({h["member"] for h in metrics["history"]}) == [1, 2]
    alone = [m["val_word_error_rate"] for m in ensemble["members"]]
    assert len(set(alone)) > 1  # different seeds, different models
    by_size = {int(k): r for k, r in ensemble["val_word_error_rate_by_size"].items()}
    assert by_size[1] == min(alone) and sorted(by_size) == [1, 2]
    kept = ensemble["kept_members"]
    assert kept >= 2  # so that what follows checks an ensemble export
    assert by_size[kept] == min(by_size.values())
    assert all(by_size[k] > by_size[kept] for k in by_size if k < kept)  # the smaller k on a tie

    config = load_pipeline("g2p-attention", [f"data.path={folder / 'pairs.csv'}", "data.source=file"])
    references = load_pairs(config.data).references("validation")
    sources = list(references)

    def wer(outputs):
        return error_rates([o.split() for o in outputs], [[r.split() for r in references[s]] for s in sources])[
            "word_error_rate"]

    loaded = tf.saved_model.load(str(export))
    exported_outputs = [o.decode() for o in loaded.translate(tf.constant(sources))["output"].numpy()]
    assert wer(exported_outputs) == pytest.approx(by_size[kept])
    members = load_members(export)
    assert len(members) == kept
    spec = json.loads((export / TRANSLATOR_FILE).read_text())
    translator = Translator(members, TokenTable(spec["source_vocabulary"], ""),
                            TokenTable(spec["target_vocabulary"], " "), config.preprocessing, config.model)
    assert translate_batches(translator, sources)[0] == exported_outputs


def test_an_ensemble_run_killed_in_its_second_member_resumes_to_the_same_ensemble(ensemble_exported, tmp_path,
                                                                                monkeypatch):
    """Members train one after the other, each resumable: a kill during member 2 loses neither member 1
    nor member 2's finished epochs, and the rerun ends as the uninterrupted run (the fixture's): the same
    histories, choice of members and test WER."""
    from kpipe.tasks.named_pipelines import load_pipeline
    from kpipe.tasks.runner import run_pipeline
    from kpipe.tasks.translate.validation import ValidationDecoding

    folder, export = ensemble_exported
    reference = json.loads((export / "metrics.json").read_text())
    overrides = [f"data.path={folder / 'pairs.csv'}", "data.source=file", *ENSEMBLE,
                 *[s for s in SMALL if s != "--set"], f'export.dir="{tmp_path}"']

    decoded = ValidationDecoding.on_epoch_end
    calls = []

    def killed_in_member_2(self, epoch, logs=None):
        calls.append(epoch)
        decoded(self, epoch, logs)
        if len(calls) == 5:  # member 2's second epoch: after its decoding, before its checkpoint
            raise KeyboardInterrupt

    monkeypatch.setattr(ValidationDecoding, "on_epoch_end", killed_in_member_2)
    with pytest.raises(KeyboardInterrupt):
        run_pipeline(load_pipeline("g2p-attention", overrides))
    trained_again = []

    def counted(self, epoch, logs=None):
        trained_again.append(epoch)
        decoded(self, epoch, logs)

    monkeypatch.setattr(ValidationDecoding, "on_epoch_end", counted)
    resumed = run_pipeline(load_pipeline("g2p-attention", overrides)).metrics

    def without_timing(history):
        return [{k: v for k, v in h.items() if k != "epoch_seconds"} for h in history]

    assert [h["member"] for h in resumed["history"]] == [1, 1, 1, 2, 2, 2]
    assert without_timing(resumed["history"]) == without_timing(reference["history"])
    assert resumed["ensemble"] == reference["ensemble"]
    assert resumed["word_error_rate"] == reference["word_error_rate"]
    # Member 1 was not trained again, member 2 from its lost second epoch on (0-based epoch numbers).
    assert trained_again == [1, 2]
