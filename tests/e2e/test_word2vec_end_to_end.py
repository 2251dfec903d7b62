"""word2vec-bible on the first verses of the real corpus: vector files for kpipe and gensim, SavedModel, errors."""


import numpy as np
import pytest
import tensorflow as tf

from kpipe.cli.commands import main
from kpipe.vectors.word_vectors import load_word_vectors

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def exported(task_run):
    run = task_run("word2vec")  # the task harness's run (tests/e2e/task_harness.py)
    assert "words/s" in run.printed
    return run.folder, run.export


def test_both_text_formats_hold_the_trained_target_table(exported):
    import keras

    import kpipe.families.word2vec.model  # noqa: F401  (registers the loss saved in model.keras)
    _, export = exported
    glove_format = load_word_vectors(str(export / "vectors.txt"))
    word2vec_format = load_word_vectors(str(export / "vectors.w2v.txt"))
    table = keras.saving.load_model(export / "model.keras").get_layer("word_vectors").embeddings.numpy()
    assert glove_format.words == word2vec_format.words and glove_format.words[0] == "the"
    np.testing.assert_allclose(glove_format.matrix, table, rtol=1e-3, atol=1e-5)
    np.testing.assert_allclose(word2vec_format.matrix, table, rtol=1e-4, atol=1e-6)
    metadata = (export / "metadata.tsv").read_text().splitlines()
    assert metadata[0] == "word\tcount" and len(metadata) == len(glove_format) + 1
    assert np.loadtxt(export / "vectors.tsv", delimiter="\t").shape == table.shape


def test_gensim_reads_the_word2vec_file(exported):
    gensim = pytest.importorskip("gensim")
    _, export = exported
    vectors = gensim.models.KeyedVectors.load_word2vec_format(str(export / "vectors.w2v.txt"))
    ours = load_word_vectors(str(export / "vectors.w2v.txt"))
    np.testing.assert_allclose(vectors["god"], ours.vector("god"), rtol=1e-6)


def test_savedmodel_embeds_raw_words(exported):
    _, export = exported
    loaded = tf.saved_model.load(str(export))
    out = loaded.embed(words=tf.constant(["god", "no-such-word"]))["vectors"].numpy()
    np.testing.assert_allclose(out[0], load_word_vectors(str(export / "vectors.txt")).vector("god"), rtol=1e-3)
    assert not out[1].any()  # unknown word -> zeros


def test_cli_neighbors_on_the_exported_vectors(exported, capsys, monkeypatch):
    folder, export = exported
    monkeypatch.chdir(folder)
    assert main(["neighbors", "god", "--vectors", str(export / "vectors.txt"), "-k", "3"]) == 0
    assert len(capsys.readouterr().out.strip().splitlines()) == 3


CORPUS_MISTAKES = {
    "empty corpus": ("\n\n  \n", [], "is empty"),
    "no words": ("... !!!\n???\n", [], "the corpus has no words"),
    "min_count removes everything": ("a b c\nb c\n", ["--set", "preprocessing.min_count=9"],
                                     "min_count=9 leaves 0 of the corpus's 3 distinct words"),
    "sparse updates with Adam": ("a b c\n", ["--set", "training.optimizer=adam"],
                                 'model.sparse_updates trains by plain SGD, not training.optimizer="adam"'),
    "batch not a multiple of the noise group": ("a b c\n", ["--set", "training.batch_size=1000"],
                                                "training.batch_size=1000 is not a multiple of "
                                                "preprocessing.negatives_shared_by=32"),
    "sparse updates with a cosine schedule": ("a b c\n", ["--set", "training.learning_rate_schedule=cosine"],
                                              "decays the learning rate linearly itself"),
}


@pytest.mark.parametrize("case", CORPUS_MISTAKES)
def test_bad_corpora_and_settings_are_one_line_exit_2(case, tmp_path, capsys, monkeypatch):
    text, extra, message = CORPUS_MISTAKES[case]
    (tmp_path / "corpus.txt").write_text(text)
    monkeypatch.chdir(tmp_path)
    assert main(["run", "word2vec-bible", "--data", "corpus.txt", *extra]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corpus.txt"]


DENSE = ["--set", "model.sparse_updates=false", "--set", "training.optimizer=adam", "--set", "training.learning_rate=0.004"]


@pytest.mark.parametrize("training", [[], DENSE], ids=["sparse SGD", "Keras Adam, noise words expanded per example"])
def test_cbow_option_trains_and_exports(tmp_path, training, monkeypatch):
    monkeypatch.chdir(tmp_path)  # in-process: the fixture runs the real command
    assert main(["run", "word2vec-bible", "--set", 'model.family="cbow"', *training, "--set", "data.limit=2000",
                 "--set", "training.epochs=1", "--set", "preprocessing.min_count=3",
                 "--set", "model.embedding_dim=8"]) == 0
    export = tmp_path / "saved_models" / "word2vec-bible" / "1"
    vectors = load_word_vectors(str(export / "vectors.txt"))
    assert 'family = "cbow"' in (export / "config.toml").read_text()
    assert vectors.dim == 8 and len(vectors) == len((export / "metadata.tsv").read_text().splitlines()) - 1


def test_the_vectors_export_as_onnx_and_litert_and_answer_without_tensorflow(exported, tmp_path):
    """`kpipe export` of word vectors: a lookup network and the words, served with the SavedModel's `embed`
    signature (same inputs and outputs, the same vectors; zeros for an unknown word), TensorFlow not needed."""
    import json
    import shutil
    import subprocess
    import sys

    from kpipe.exports.portable import export_portable
    from kpipe.serving.repository import load_version
    from tests.helpers import without_modules

    _, export = exported
    source = tmp_path / "1"
    shutil.copytree(export, source)
    words = np.array([b"god", b"the", b"no-such-word", b"", b"God"], dtype=object)
    saved = load_version(source).signatures
    expected = saved["embed"]({"words": words})["vectors"]
    assert np.abs(expected[2]).max() == 0 and np.abs(expected[0]).max() > 0
    for fmt, quantize in (("onnx", "none"), ("litert", "none"), ("onnx", "int8")):
        portable = load_version(export_portable(source, fmt, quantize)).signatures
        assert sorted(portable) == sorted(saved)
        assert (portable["embed"].inputs, portable["embed"].outputs) == (saved["embed"].inputs, saved["embed"].outputs)
        tolerance = 1e-6 if quantize == "none" else 0.01 * np.abs(expected).max()
        np.testing.assert_allclose(portable["embed"]({"words": words})["vectors"], expected, atol=tolerance,
                                   err_msg=f"{fmt} {quantize}")
    code = (without_modules("tensorflow", "keras") +
            "from kpipe.portable.runtime import open_portable\n"
            f"print(open_portable({str(tmp_path / '1-onnx')!r}).embed(['god']).tolist())\n")
    answered = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert answered.returncode == 0, answered.stderr[-2000:]
    np.testing.assert_allclose(json.loads(answered.stdout)[0], expected[0], rtol=1e-6)
