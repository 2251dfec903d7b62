"""`kpipe map`: 2-D maps of word vectors, pinned against NumPy, through the real command."""

import csv

import numpy as np
import pytest

from kpipe.cli.commands import main
from kpipe.vectors import maps
from kpipe.errors import KpipeError
from tests.helpers import kpipe


def test_pca_coordinates_are_the_first_two_principal_components_by_numpy_svd():
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(12, 6)) @ np.diag([5, 3, 1, 0.5, 0.2, 0.1])
    points = maps.make_map([f"w{i}" for i in range(12)], vectors, method="pca")
    centred = vectors - vectors.mean(axis=0)
    u, s, _ = np.linalg.svd(centred, full_matrices=False)
    reference = u[:, :2] * s[:2]
    signs = np.sign(np.sum(points.coords * reference, axis=0))  # a component's sign is arbitrary
    np.testing.assert_allclose(points.coords, reference * signs, atol=1e-9)


def test_tsne_and_kmeans_separate_two_far_apart_groups():
    rng = np.random.default_rng(1)
    vectors = np.concatenate([rng.normal(0, 0.1, (6, 8)) + 5 * np.eye(8)[0], rng.normal(0, 0.1, (6, 8)) + 5 * np.eye(8)[1]])
    points = maps.make_map([str(i) for i in range(12)], vectors, method="tsne", clusters=2, seed=0)
    assert points.coords.shape == (12, 2) and np.all(np.isfinite(points.coords))
    assert len(set(points.groups[:6])) == 1 and len(set(points.groups[6:])) == 1 and points.groups[0] != points.groups[6]
    first, second = points.coords[:6].mean(axis=0), points.coords[6:].mean(axis=0)
    spread = max(np.linalg.norm(points.coords[:6] - first, axis=1).max(), np.linalg.norm(points.coords[6:] - second, axis=1).max())
    assert np.linalg.norm(first - second) > spread  # the groups land apart


def test_a_map_needs_three_points():
    with pytest.raises(KpipeError, match="at least 3 points"):
        maps.make_map(["a", "b"], np.eye(2))


def test_plot_has_a_label_for_every_point(tmp_path, monkeypatch):
    import matplotlib.pyplot as plt

    figures = []
    monkeypatch.setattr(plt, "close", figures.append)  # keep the figure to look inside
    points = maps.make_map(["cat", "dog", "car", "bus"], np.eye(4) + 0.1, groups=["animal", "animal", "car", "car"])
    path = maps.plot_map(points, tmp_path / "map.png")
    assert path.stat().st_size > 10_000
    ax = figures[0].axes[0]
    assert sorted(t.get_text() for t in ax.texts) == ["bus", "car", "cat", "dog"]
    assert sorted(t.get_text() for t in ax.get_legend().get_texts()) == ["animal", "car"]


@pytest.fixture
def vectors_file(tmp_path):
    rng = np.random.default_rng(2)
    words = ["apple", "pear", "plum", "car", "bus", "van"]
    base = {"apple": 0, "pear": 0, "plum": 0, "car": 1, "bus": 1, "van": 1}
    lines = [f"{w} " + " ".join(f"{x:.5f}" for x in 3 * np.eye(5)[base[w]] + rng.normal(0, 0.3, 5)) for w in words]
    path = tmp_path / "tiny.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.slow
def test_map_command_writes_png_and_csv_and_names_unknown_words_in_one_line(vectors_file, tmp_path):
    groups = tmp_path / "groups.tsv"
    groups.write_text("apple\tfruit\npear\tfruit\ncar\tvehicle\nbus\tvehicle\n")
    run = kpipe("map", str(vectors_file), "--words", "apple", "pear", "car", "bus", "zebra", "quux",
                "--groups", str(groups), "--out", "m.png", "--csv", "m.csv", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    warnings = [line for line in run.stderr.splitlines() if "warning" in line]
    assert warnings == [f"kpipe: warning: not in the vocabulary of {vectors_file}, left out: zebra, quux"]
    assert (tmp_path / "m.png").stat().st_size > 10_000
    rows = list(csv.DictReader((tmp_path / "m.csv").open()))
    assert [(r["label"], r["group"]) for r in rows] == [("apple", "fruit"), ("pear", "fruit"), ("car", "vehicle"),
                                                         ("bus", "vehicle")]
    # PCA separates the two groups along its first axis.
    x = {r["label"]: float(r["x"]) for r in rows}
    assert np.sign(x["apple"]) == np.sign(x["pear"]) != np.sign(x["car"]) == np.sign(x["bus"])


# In-process from here on: the command's subprocess test is the one above.
def test_map_with_too_few_known_words_is_one_line_exit_2(vectors_file, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["map", str(vectors_file), "--words", "apple", "zebra", "quux", "--out", "m.png"]) == 2
    assert not (tmp_path / "m.png").exists()
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("kpipe: error")]
    assert errors == [f"kpipe: error: only 1 of the 3 words are in the vocabulary of {vectors_file}; "
                      "a map needs at least 3"]


def test_map_of_a_words_file_with_groups_and_the_top_words(vectors_file, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    words = tmp_path / "words.tsv"
    words.write_text("plum\tfruit\nvan\tvehicle\napple\tfruit\n")
    assert main(["map", str(vectors_file), "--file", str(words), "--csv", "a.csv"]) == 0
    assert [(r["label"], r["group"]) for r in csv.DictReader((tmp_path / "a.csv").open())] == [
        ("plum", "fruit"), ("van", "vehicle"), ("apple", "fruit")]
    assert main(["map", str(vectors_file), "--top", "4", "--clusters", "2", "--csv", "b.csv"]) == 0
    rows = list(csv.DictReader((tmp_path / "b.csv").open()))
    assert [r["label"] for r in rows] == ["apple", "pear", "plum", "car"]
    assert len({r["group"] for r in rows[:3]}) == 1 and rows[3]["group"] != rows[0]["group"]


@pytest.mark.parametrize("option", ["--groups", "--texts-file"])
def test_a_missing_input_file_is_one_line_exit_2(option, vectors_file, tmp_path):
    words = ["--words", "apple", "pear", "car"] if option == "--groups" else []
    run = kpipe("map", str(vectors_file), *words, option, "absent.tsv", "--out", "m.png", cwd=tmp_path)
    assert run.returncode == 2 and not (tmp_path / "m.png").exists()
    assert run.stderr.strip().splitlines() == [f"kpipe: error: {option} not found: absent.tsv"], run.stderr
