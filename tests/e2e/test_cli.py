"""The `kpipe` command: help, and the one-line error (exit 2, nothing written) for each user mistake."""

import json
import subprocess
import sys

import pytest

from kpipe.cli.commands import main
from tests.helpers import kpipe, kpipe_reporting_tensorflow


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_help_lists_commands_and_examples(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    for word in ("list", "show", "run", "predict", "kpipe run sentiment-bilstm --set training.epochs=1"):
        assert word in out


def test_list_and_show(capsys):
    code, out, _ = run_cli(capsys, "list")
    rows = {line.split()[0]: line.split() for line in out.splitlines()}
    assert code == 0 and rows["PIPELINE"][:4] == ["PIPELINE", "TASK", "FAMILY", "EXPORTS"]
    assert rows["sentiment-bilstm"][:6] == ["sentiment-bilstm", "classify", "rnn_classifier", "SavedModel,", "ONNX,",
                                            "LiteRT"]
    assert "embedded:tweets-sentiment" in rows["sentiment-bilstm"]
    assert rows["g2p-attention"][:5] == ["g2p-attention", "translate", "seq2seq_attention", "SavedModel",
                                         "embedded:cmudict"]  # the translators export no portable format
    code, out, _ = run_cli(capsys, "show", "imdb-bilstm", "--data", "reviews.csv", "--set", "training.epochs=2")
    assert code == 0
    assert 'source = "file"' in out and 'path = "reviews.csv"' in out and "epochs = 2" in out


def test_list_show_and_the_word_tools_run_as_real_processes_the_word_tools_without_tensorflow(tmp_path):
    """`python -m kpipe` for the commands that need no export (their other tests call `main`); the word tools
    read a vectors file without loading TensorFlow (under a second, not ten)."""
    (tmp_path / "v.txt").write_text("cat 1.0 0.0 0.0\nkitten 0.9 0.1 0.0\ndog 0.0 1.0 0.0\nthe 0.1 0.2 0.3\n")
    listed = kpipe("list", cwd=tmp_path)
    assert listed.returncode == 0 and "sentiment-bilstm" in listed.stdout, listed.stderr[-2000:]
    shown = kpipe("show", "sentiment-bilstm", "--set", "training.epochs=2", cwd=tmp_path)
    assert shown.returncode == 0 and "epochs = 2" in shown.stdout, shown.stderr[-2000:]
    neighbors = kpipe("neighbors", "cat", "--vectors", "v.txt", "-k", "1", cwd=tmp_path)
    assert neighbors.returncode == 0 and neighbors.stdout == "0.9939\tkitten\n", neighbors.stderr[-2000:]
    analogy = kpipe("analogy", "cat", "kitten", "dog", "--vectors", "v.txt", "-k", "1", cwd=tmp_path)
    assert analogy.returncode == 0 and analogy.stdout.endswith("\tthe\n")  # cat - kitten + dog: "the" is left
    similarity = kpipe_reporting_tensorflow("similarity", "cat", "kitten", "--vectors", "v.txt", cwd=tmp_path)
    assert similarity.returncode == 0 and similarity.stdout.split() == ["0.9939", "False"], similarity.stderr


def make_bad_inputs(tmp_path):
    (tmp_path / "header_only.csv").write_text("text,label\n")
    (tmp_path / "one_class.csv").write_text("text,label\n" + "".join(f"text {i},pos\n" for i in range(20)))
    (tmp_path / "latin1.csv").write_bytes("text,label\ncaf\xe9,1\nok,0\n".encode("latin-1"))
    (tmp_path / "latin1.txt").write_bytes("fine\ncaf\xe9\n".encode("latin-1"))
    times = [f"2024-01-{d:02d}" for d in range(1, 31)]
    (tmp_path / "gappy.csv").write_text("time,y\n" + "".join(
        f"{t},{'' if i == 7 else i}\n" for i, t in enumerate(times)))
    (tmp_path / "unsorted.csv").write_text("time,y\n" + "".join(
        f"{t},{i}\n" for i, t in enumerate(times[:3][::-1] + times[3:])))


CASES = {
    "unknown pipeline": (["run", "no-such-pipeline"], "unknown pipeline 'no-such-pipeline'"),
    "unknown override": (["run", "sentiment-bilstm", "--set", "training.epohcs=1"],
                         "unknown key 'training.epohcs' (did you mean 'training.epochs'?)"),
    "ill-typed override": (["run", "sentiment-bilstm", "--set", "training.epochs=two"],
                           "training.epochs must be an integer. Received: 'two'"),
    "misspelt pooling": (["run", "imdb-bilstm", "--set", 'model.pooling="maxx"'],
                         "`pooling` must be one of 'last', 'max', 'mean', 'max_mean'. Received: pooling='maxx' "
                         "(did you mean 'max'?)"),
    "misspelt standardize": (["run", "sentiment-bilstm", "--set", 'preprocessing.standardize="split_punct"'],
                             "`standardize` must be one of 'lower_and_strip_punctuation', "
                             "'lower_and_split_punctuation', 'lower_and_split_punctuation_and_contractions', "
                             "'lower', 'none'"),
    "character n-grams too long": (["run", "sentiment-bigrams", "--set", "model.char_ngrams=9"],
                                   "`char_ngrams` must be ≥ 0 and ≤ 8. Received: char_ngrams=9"),
    "malformed override": (["run", "sentiment-bilstm", "--set", "training.epochs"], "--set expects KEY=VALUE"),
    "missing data file": (["run", "imdb-bilstm", "--data", "missing.csv"], "data file not found: missing.csv"),
    "empty dataset": (["run", "imdb-bilstm", "--data", "header_only.csv"], "has no examples"),
    "one class": (["run", "imdb-bilstm", "--data", "one_class.csv"], "has a single class ('pos')"),
    "non-UTF-8 text": (["run", "imdb-bilstm", "--data", "latin1.csv"], "latin1.csv is not valid utf-8"),
    "vectors of the wrong size": (["run", "sentiment-glove", "--set", "model.embedding_dim=64"],
                                  "has 50-dimensional vectors but the config asks for embedding_dim=64"),
    "two-phase without frozen epochs left": (
        ["run", "sentiment-glove", "--set", 'model.embedding_training="two_phase"', "--set", "training.epochs=2"],
        "model.frozen_epochs=2 leaves no epoch for fine-tuning with training.epochs=2"),
    "two-phase without vectors": (["run", "sentiment-bilstm", "--set", 'model.embedding_training="two_phase"',
                                   "--set", 'model.pretrained_embeddings=""'], "model.pretrained_embeddings is empty"),
    "series with a gap and no fill rule": (
        ["run", "weather-ar", "--data", "gappy.csv", "--set", 'data.time_column="time"', "--set",
         'data.target_column="y"', "--set", "data.covariates=[]"],
        "1 missing value(s) (y: 1; first in 'y' at row 8); set data.fill"),
    "series out of time order": (
        ["run", "weather-ar", "--data", "unsorted.csv", "--set", 'data.time_column="time"', "--set",
         'data.target_column="y"', "--set", "data.covariates=[]"],
        "timestamps out of order at row 2"),
    "ensemble member with a strategy of its own": (
        ["run", "imdb-ensemble", "--set", 'model.ngrams_training.strategy="one_device"'],
        "model.ngrams_training.strategy differs from training.strategy; a run's strategy, worker timeout and refit "
        "are [training]'s: set it there only"),
    "ensemble weights past 1": (
        ["run", "imdb-ensemble", "--set", "model.recurrent.units=[8]", "--set", "model.ngram_weight=0.5", "--set",
         "model.recurrent_weight=0.7"],
        "model.ngram_weight + model.recurrent_weight = 1.2 > 1; the sequence member gets what they leave, so make "
        "their sum at most 1"),
    "classifier ensemble of no sequence members": (
        ["run", "sentiment-minilm-ensemble", "--set", "model.sequence_members=0"],
        "`sequence_members` must be ≥ 1. Received: sequence_members=0"),
    "translate ensemble of no models": (["run", "g2p-attention", "--set", "model.ensemble_members=0"],
                                        "`ensemble_members` must be ≥ 1. Received: ensemble_members=0"),
    "forecast window too short for the linear path": (
        ["run", "electricity-seasonal-ar", "--set", "model.linear_steps=400"],
        "model.linear_steps=400 is longer than preprocessing.window=384"),
    "MSTL baseline on a window shorter than two seasons": (
        ["run", "electricity-mstl", "--set", "preprocessing.window=500"],
        "model.add_baseline='mstl' needs a window of two seasons; got preprocessing.window=500"),
    "recurrent correction switched off with nothing to fall back on": (
        ["run", "electricity-seasonal-ar", "--set", 'model.add_baseline="none"', "--set", "model.linear_steps=0",
         "--set", 'model.recurrent_correction="if_better"'],
        "model.recurrent_correction='if_better' needs something to fall back on"),
    "non-UTF-8 corpus": (["run", "word2vec-bible", "--data", "latin1.txt"],
                         "latin1.txt is not valid utf-8 (line 2); re-save it as UTF-8 or set data.encoding"),
    "non-UTF-8 names file": (["run", "names-char", "--data", "latin1.txt"], "latin1.txt is not valid utf-8 (line 2)"),
    "neighbors with k 0": (["neighbors", "frog", "-k", "0"], "k must be ≥ 1. Received: k=0"),
    "predict missing model": (["predict", "saved_models/nope/1", "hello"], "no exported model at 'saved_models/nope/1'"),
    "predict non-UTF-8 file": (["predict", "m", "--file", "latin1.txt"], "latin1.txt is not valid UTF-8 (line 2"),
}


CASES.update({
    "predict given a forecaster": (["predict", "forecaster", "hello"],
                                   "forecaster is a forecast export (pipeline electricity-seasonal-ar), but `kpipe predict` "
                                   "needs a classify export; for this one use: kpipe forecast forecaster --input"),
    "forecast given a classifier": (["forecast", "classifier", "--input", "x.csv"],
                                    "for this one use: kpipe predict classifier"),
    "embed given a BiLSTM classifier": (["embed", "classifier", "hello"],
                                        "has no `embed` signature, which `kpipe embed` needs"),
    "translate given a folder that is not an export": (["translate", "not-kpipe", "hello"],
                                                       "not-kpipe has no kpipe.json: not a kpipe export"),
})


def fake_export(folder, **manifest):
    """A version folder as far as the commands' checks go: a SavedModel file and a manifest."""
    folder.mkdir()
    (folder / "saved_model.pb").write_bytes(b"")
    if manifest:
        (folder / "kpipe.json").write_text(json.dumps(manifest))


# Caught while the config, the data source's path or the export's manifest is read, before TensorFlow loads:
# these run in-process (`main([...])`), and one fresh process runs them all to show TensorFlow stays unloaded.
BEFORE_TENSORFLOW = [
    "unknown pipeline", "unknown override", "ill-typed override", "misspelt pooling", "misspelt standardize",
    "character n-grams too long", "malformed override", "two-phase without frozen epochs left",
    "two-phase without vectors", "ensemble member with a strategy of its own", "ensemble weights past 1",
    "translate ensemble of no models", "forecast window too short for the linear path",
    "MSTL baseline on a window shorter than two seasons",
    "recurrent correction switched off with nothing to fall back on", "predict missing model",
    "predict non-UTF-8 file", "predict given a forecaster", "forecast given a classifier",
    "embed given a BiLSTM classifier", "translate given a folder that is not an export",
]
AFTER_TENSORFLOW = [case for case in CASES if case not in BEFORE_TENSORFLOW]


def prepare(folder):
    make_bad_inputs(folder)
    fake_export(folder / "m", task="classify", pipeline="sentiment-bilstm", signatures={"serve": {}})
    fake_export(folder / "classifier", task="classify", pipeline="sentiment-bilstm", family="rnn_classifier",
                signatures={"serve": {}})
    fake_export(folder / "forecaster", task="forecast", pipeline="electricity-seasonal-ar", signatures={"serve": {}})
    fake_export(folder / "not-kpipe")
    return sorted(str(p) for p in folder.rglob("*"))


def check_one_line(case, code, err, before, after):
    assert code == 2, err[-2000:]
    last = err.strip().splitlines()[-1]
    assert last.startswith("kpipe: error: ") and CASES[case][1] in last, err[-2000:]
    assert "Traceback" not in err
    assert after == before  # nothing written


@pytest.mark.parametrize("case", BEFORE_TENSORFLOW)
def test_config_and_export_mistakes_get_one_line_exit_2_and_nothing_written(case, tmp_path, monkeypatch, capsys):
    before = prepare(tmp_path)
    monkeypatch.chdir(tmp_path)
    code = main(CASES[case][0])
    check_one_line(case, code, capsys.readouterr().err, before, sorted(str(p) for p in tmp_path.rglob("*")))


def test_those_mistakes_are_reported_before_tensorflow_loads(tmp_path):
    prepare(tmp_path)
    code = ("import json, sys\nfrom kpipe.cli.commands import main\n"
            "codes = [main(argv) for argv in json.loads(sys.argv[1])]\n"
            "print(json.dumps({'codes': codes, 'tensorflow': 'tensorflow' in sys.modules}))\n")
    run = subprocess.run([sys.executable, "-c", code, json.dumps([CASES[c][0] for c in BEFORE_TENSORFLOW])],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result == {"codes": [2] * len(BEFORE_TENSORFLOW), "tensorflow": False}, run.stderr[-2000:]


# One fresh process runs `main` on every data mistake, each in its own folder (TensorFlow loads once, not ten
# times); one of them also goes through `python -m kpipe` itself.
RUN_CASES = """
import contextlib, io, json, os, sys
from kpipe.cli.commands import main
results = {}
for case, folder, argv in json.loads(sys.argv[1]):
    os.chdir(folder)
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(argv)
    results[case] = [code, err.getvalue()]
print(json.dumps(results))
"""


@pytest.fixture(scope="module")
def mistakes(tmp_path_factory):
    """The data mistakes (found once TensorFlow has loaded): (exit code, stderr, files before, files after)."""
    folders = {case: tmp_path_factory.mktemp("case") for case in AFTER_TENSORFLOW}
    before = {case: prepare(folder) for case, folder in folders.items()}
    run = subprocess.run([sys.executable, "-c", RUN_CASES,
                          json.dumps([[case, str(folders[case]), CASES[case][0]] for case in AFTER_TENSORFLOW])],
                         capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert run.returncode == 0, run.stderr[-3000:]
    results = json.loads(run.stdout.strip().splitlines()[-1])
    return {case: (*results[case], before[case], sorted(str(p) for p in folders[case].rglob("*")))
            for case in AFTER_TENSORFLOW}


@pytest.mark.slow
def test_a_data_mistake_through_python_m_kpipe(tmp_path):
    before = prepare(tmp_path)
    result = kpipe(*CASES["one class"][0], cwd=tmp_path)
    check_one_line("one class", result.returncode, result.stderr, before, sorted(str(p) for p in tmp_path.rglob("*")))


@pytest.mark.slow
@pytest.mark.parametrize("case", AFTER_TENSORFLOW)
def test_data_mistakes_get_one_line_exit_2_and_nothing_written(case, mistakes):
    check_one_line(case, *mistakes[case])


def test_debug_flag_shows_the_traceback(capsys):
    from kpipe.errors import ConfigError

    with pytest.raises(ConfigError):
        main(["--debug", "run", "no-such-pipeline"])
