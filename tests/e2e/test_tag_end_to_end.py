"""ner-tweets end to end on the task harness's small run: the report beside both baselines, the export's two
signatures agreeing with each other and with the report, `kpipe tag` in a real process, and every mistake of a
tagged file as one line with exit 2 and nothing written."""

import itertools
import json
import subprocess
import sys

import numpy as np
import pytest

from kpipe.cli.commands import main

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def exported(task_run):
    run = task_run("tag")  # the task harness's run (tests/e2e/task_harness.py)
    return run.folder, run.export


def test_the_report_scores_entities_beside_both_baselines(exported):
    _, export = exported
    metrics = json.loads((export / "metrics.json").read_text())
    assert 0 <= metrics["entity_f1"] <= 1 and metrics["token_accuracy"] > 0.8
    for baseline in ("most_frequent_tag", "feature_crf"):
        assert {"entity_f1", "entity_precision", "entity_recall", "per_type"} <= set(metrics["baseline"][baseline])
    assert metrics["data"]["tags"][0] == "O" and len(metrics["data"]["tags"]) == 21  # 10 types, B- and I-


def test_raw_text_and_pre_split_words_get_the_same_tags_and_entities_match_their_words(exported):
    from kpipe.exports.saved_model import load_saved_model

    _, export = exported
    loaded = load_saved_model(export)
    texts = ["Barack Obama visited Paris with @john", "I love New York and Justin Bieber !", ""]
    raw = {k: v.numpy() for k, v in loaded.signatures["serving_default"](text=np.array(texts, dtype=object)).items()}
    words = raw["words"]
    split = loaded.signatures["tag_tokens"](tokens=words)
    np.testing.assert_array_equal(split["tags"].numpy(), raw["tags"])
    assert [w.decode() for w in words[0] if w] == ["Barack", "Obama", "visited", "Paris", "with", "@john"]
    assert (raw["entity_labels"] != b"").any()  # the small run marks some: the check below is not vacuous
    for i, text in enumerate(texts):  # each entity covers exactly the characters of its words
        for label, start, end, covered in zip(raw["entity_labels"][i], raw["entity_starts"][i],
                                              raw["entity_ends"][i], raw["entity_texts"][i]):
            if label:
                assert text[start:end] == covered.decode() and covered
    for alone in (["Paris"], [""]):  # a batch one word long, or none: the CRF's decoding has one step, or none
        tags = loaded.signatures["serving_default"](text=np.array(alone, dtype=object))["tags"].numpy()
        assert tags.shape == (1, len(alone[0].split())), alone


def test_kpipe_tag_marks_the_entities_in_a_fresh_process(exported, tmp_path):
    folder, export = exported
    out = subprocess.run([sys.executable, "-m", "kpipe", "tag", str(export), "Barack Obama visited Paris",
                          "--format", "jsonl"], capture_output=True, text=True, timeout=180, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    answer = json.loads(out.stdout)
    assert answer["words"] == ["Barack", "Obama", "visited", "Paris"] and len(answer["tags"]) == 4
    from kpipe.tasks.tag.predict import marked
    assert marked({"text": "Ann met Bo", "entities": [{"label": "PER", "start": 0, "end": 3},
                                                     {"label": "PER", "start": 8, "end": 10}]}) == \
        "[PER Ann] met [PER Bo]"


@pytest.mark.parametrize("output", ["out.csv", "out.parquet"])
def test_a_table_of_texts_gets_its_rows_back_with_the_marked_text_tags_and_entities(exported, tmp_path, monkeypatch,
                                                                                    output):
    import pandas as pd

    from kpipe.tasks.tag.predict import marked, tag_texts

    _, export = exported
    monkeypatch.chdir(tmp_path)
    texts = ["Barack Obama visited Paris", "I love New York", ""]
    pd.DataFrame({"id": ["a", "b", "c"], "text": texts}).to_csv("in.csv", index=False)
    assert main(["tag", str(export), "--file", "in.csv", "--output", output]) == 0
    written = pd.read_csv(output, dtype=str, keep_default_na=False) if output.endswith(".csv") \
        else pd.read_parquet(output)
    expected = tag_texts(export, texts)
    assert list(written["id"]) == ["a", "b", "c"] and list(written["text"]) == texts
    assert list(written["marked"]) == [marked(a) for a in expected]
    assert list(written["tags"]) == [" ".join(a["tags"]) for a in expected]
    assert [json.loads(e) for e in written["entities"]] == [a["entities"] for a in expected]


CONLL = ("-DOCSTART- -X- O O\n\nBarack NNP B-PER\nObama NNP I-PER\nvisited VBD O\nParis NNP B-LOC\n\n"
         "Paris NNP B-LOC\n\nI PRP O\nlove VBP O\nNew NNP B-LOC\nYork NNP I-LOC\n")


def test_a_conll_file_is_tagged_line_by_line_in_its_own_words(exported, tmp_path, monkeypatch, capsys):
    """CoNLL in, CoNLL out: each word line gets the tag `tag_tokens` gives that sentence's words as a new last
    column, -DOCSTART- an O, blank lines stay (conlleval reads the result); printed, or written to --output."""
    from kpipe.exports.saved_model import load_saved_model

    _, export = exported
    monkeypatch.chdir(tmp_path)
    (tmp_path / "dev.txt").write_text(CONLL, encoding="utf-8")
    assert main(["tag", str(export), "--file", "dev.txt", "--conll", "--output", "dev.tagged"]) == 0
    written = (tmp_path / "dev.tagged").read_text(encoding="utf-8").split("\n")
    source = CONLL.split("\n")
    assert len(written) == len(source) and [w == "" for w in written] == [s == "" for s in source]
    tag_tokens = load_saved_model(export).signatures["tag_tokens"]
    tags = iter([])
    for words in (["Barack", "Obama", "visited", "Paris"], ["Paris"], ["I", "love", "New", "York"]):
        padded = np.array([words + [""] * (4 - len(words))], dtype=object)
        tags = itertools.chain(tags, [t.decode() for t in tag_tokens(tokens=padded)["tags"].numpy()[0][:len(words)]])
    expected = [line + (" O" if line.startswith("-DOCSTART-") else f" {next(tags)}") if line else ""
                for line in source]
    assert written == expected
    capsys.readouterr()
    assert main(["tag", str(export), "--file", "dev.txt", "--conll"]) == 0  # printed, the same lines
    assert capsys.readouterr().out.split("\n")[:len(written)] == written


@pytest.mark.parametrize("text, extra, message", [
    ("EU B-ORG\nrejects VBZ O\n", [], "dev.txt:2: 3 columns, but the file's first word line has 2"),
    ("EU B-ORG\n", ["--token-column", "2"], "dev.txt:1: --token-column 2, but the lines have 2 column(s)"),
    ("-DOCSTART- -X- O O\n\n", [], "dev.txt holds no sentences"),
    ("EU B-ORG\n", ["extra text"], "--conll tags a CoNLL --file"),
    ("EU B-ORG\n", ["--column", "text"], "the words in --token-column); give the file, no texts and no --column"),
])
def test_a_bad_conll_file_is_one_line_exit_2_before_the_model_loads(tmp_path, monkeypatch, capsys, text, extra,
                                                                    message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "dev.txt").write_text(text, encoding="utf-8")
    assert main(["tag", "no-such-export", "--file", "dev.txt", "--conll", "--output", "out.txt", *extra]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err
    assert not (tmp_path / "out.txt").exists()


@pytest.mark.parametrize("text, name, extra, message", [
    ("EU B-ORG\nrejects VBZ O\n", "bad.txt", [], "bad.txt:2: 3 columns, but the file's first line has 2"),
    ("EU B-ORG\nPeter PER\n", "bad.txt", [], "bad.txt:2: tag 'PER' is not O or B-TYPE/I-TYPE"),
    ("", "bad.txt", [], "holds no sentences"),
    ('{"tokens": ["a", "b"], "tags": ["O"]}\n', "bad.jsonl", [], "row 1 has 2 tokens but 1 tags"),
])
def test_a_bad_tagged_file_is_one_line_exit_2_and_nothing_written(tmp_path, monkeypatch, capsys, text, name, extra,
                                                                   message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / name).write_text(text, encoding="utf-8")
    assert main(["run", "ner-tweets", "--set", 'data.source="file"', "--set", f'data.path="{name}"', *extra]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err
    assert not (tmp_path / "saved_models").exists() or not any((tmp_path / "saved_models").rglob("saved_model.pb"))


def test_a_pretrained_tagger_tags_every_word_of_a_sentence_longer_than_its_window(tmp_path, monkeypatch):
    """ner-conll-minilm on a tiny BERT checkpoint and a small CoNLL file, with the words' casing beside the encoder's
    features: trained, exported, and a 60-word sentence (several windows of 24 pieces) gets a tag for each of its
    words."""
    from pathlib import Path

    from kpipe.tasks.tag.predict import tag_texts
    from tests.checkpoints import write_hugging_face_checkpoint

    monkeypatch.chdir(tmp_path)
    write_hugging_face_checkpoint(Path("checkpoint"), seed=4)
    rng = np.random.default_rng(0)
    lines = []
    for document in range(12):
        lines += ["-DOCSTART- -X- -X- O", ""]
        for _ in range(6):
            words = rng.choice(["the", "film", "was", "good", "Ann", "Bo", "Paris", "crew"], size=rng.integers(3, 9))
            lines += [f"{w} NN O {'B-PER' if w in ('Ann', 'Bo') else 'B-LOC' if w == 'Paris' else 'O'}"
                      for w in words] + [""]
    Path("train.txt").write_text("\n".join(lines), encoding="utf-8")
    Path("dev.txt").write_text("\n".join(lines[:60]) + "\n", encoding="utf-8")
    assert main(["run", "ner-conll-minilm", "--data", "train.txt", "--set", 'data.test_path="dev.txt"', "--set",
                 'model.preset="checkpoint"', "--set", "preprocessing.sequence_length=24", "--set",
                 "preprocessing.stride=8", "--set", "training.epochs=1", "--set", "model.casing=true"]) == 0
    export = tmp_path / "saved_models" / "ner-conll-minilm" / "1"
    metrics = json.loads((export / "metrics.json").read_text())
    assert {"entity_f1", "token_accuracy"} <= set(metrics) and "feature_crf" in metrics["baseline"]
    import keras_hub  # noqa: F401  (registers the backbone for model.keras)

    from kpipe import load_keras_model

    assert "casing" in load_keras_model(export).input  # the export's graph feeds it the casing of raw words
    long_text = " ".join(["Ann visited the good crew in Paris"] * 9)  # 63 words, ~70 pieces: 4+ windows
    answer = tag_texts(export, [long_text, "Bo"])
    assert len(answer[0]["tags"]) == len(long_text.split()) == 63 and len(answer[1]["tags"]) == 1
    assert all(tag == "O" or tag[:2] in ("B-", "I-") for tag in answer[0]["tags"])
