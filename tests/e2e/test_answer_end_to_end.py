"""squad-minilm end to end on the task harness's small run (a tiny BERT checkpoint, SQuAD JSON of its own words): the
report beside the sliding-window baseline, the test split's answers written per question, the SavedModel answering
raw strings exactly as the run's own decoding did, `kpipe answer` in a real process and on tables, and bad input as
one line with exit 2 and nothing written."""

import json
import shutil
import subprocess
import sys

import pandas as pd
import pytest

from kpipe.cli.commands import main
from tests.helpers import kpipe_without
from tests.made_up_data import squad_articles

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def exported(task_run):
    run = task_run("answer")  # the task harness's run (tests/e2e/task_harness.py)
    return run.folder, run.export


def contexts_by_id(folder) -> dict[str, str]:
    data = json.loads((folder / "squad.json").read_text())["data"]
    return {qa["id"]: p["context"] for article in data for p in article["paragraphs"] for qa in p["qas"]}


def test_the_report_scores_the_test_split_beside_the_baseline_and_keeps_every_answer(exported):
    folder, export = exported
    metrics = json.loads((export / "metrics.json").read_text())
    for figures in (metrics["test"], metrics["baseline"]["test"]):
        assert 0 <= figures["exact_match"] <= figures["f1"] <= 100
    assert metrics["test"]["questions"] == metrics["data"]["questions"]["test"] > 0
    assert metrics["data"]["articles"]["test"] >= 1 and metrics["data"]["windows"]["train"] > 0
    answers = [json.loads(line) for line in (export / "test_answers.jsonl").read_text().splitlines()]
    assert len(answers) == metrics["test"]["questions"]
    contexts = contexts_by_id(folder)
    for answer in answers:
        assert {"id", "question", "gold", "answer", "start", "end", "score", "exact_match", "f1"} <= set(answer)
        assert contexts[answer["id"]][answer["start"]:answer["end"]] == answer["answer"]
    assert sum(a["f1"] for a in answers) * 100 / len(answers) == pytest.approx(metrics["test"]["f1"])


def test_the_savedmodel_answers_raw_strings_as_the_run_did(exported):
    from kpipe.tasks.answer.predict import answer_questions

    folder, export = exported
    answers = [json.loads(line) for line in (export / "test_answers.jsonl").read_text().splitlines()]
    contexts = contexts_by_id(folder)
    found = answer_questions(export, [a["question"] for a in answers], [contexts[a["id"]] for a in answers])
    assert [(f["answer"], f["start"], f["end"]) for f in found] == [(a["answer"], a["start"], a["end"])
                                                                    for a in answers]
    assert [f["score"] for f in found] == pytest.approx([a["score"] for a in answers], abs=1e-4)


@pytest.mark.parametrize("fmt", ["onnx", "litert"])
def test_portable_exports_answer_the_test_questions_as_the_savedmodel_without_tensorflow(exported, task_portable, fmt):
    from kpipe.tasks.answer.predict import answer_questions

    folder, source = exported
    portable = task_portable("answer", fmt)  # the ONNX one: the task harness's too
    answers = [json.loads(line) for line in (source / "test_answers.jsonl").read_text().splitlines()]
    contexts = contexts_by_id(folder)
    questions, passages = [a["question"] for a in answers], [contexts[a["id"]] for a in answers]
    expected = answer_questions(source, questions, passages)
    found = answer_questions(portable, questions, passages)
    same = [(f["answer"], f["start"], f["end"]) == (e["answer"], e["start"], e["end"]) for f, e in zip(found, expected)]
    assert sum(same) >= 0.99 * len(same), f"{sum(same)} of {len(same)} answers equal"
    spans = lambda answers: [[(c["start"], c["end"]) for c in a["n_best"]] for a in answers]  # noqa: E731
    expected_n, found_n = (spans(answer_questions(folder, questions[:40], passages[:40], n_best=3))
                           for folder in (source, portable))
    same = [f == e for f, e in zip(found_n, expected_n)]
    assert sum(same) >= 0.95 * len(same) and all(n for n in expected_n), f"{sum(same)} of {len(same)} n-best equal"
    answered = kpipe_without(("tensorflow", "keras", "tf_keras"),
                             ["answer", str(portable), "--question", questions[0], "--context", passages[0], "--json"])
    assert answered.returncode == 0, answered.stderr[-2000:]
    assert json.loads(answered.stdout)["answer"] == found[0]["answer"]


def test_kpipe_answer_in_a_fresh_process_and_a_long_context(exported, tmp_path):
    _, export = exported
    long_context = " ".join(["the film was good and the plot was awful"] * 30)  # ten windows and more
    (tmp_path / "passage.txt").write_text(long_context, encoding="utf-8")
    out = subprocess.run([sys.executable, "-m", "kpipe", "answer", str(export), "--question",
                          "which word follows good ?", "--question", "who ?", "--context-file", "passage.txt",
                          "--json"], capture_output=True, text=True, timeout=180, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    found = [json.loads(line) for line in out.stdout.splitlines()]
    assert [f["question"] for f in found] == ["which word follows good ?", "who ?"]
    for f in found:
        assert f["answer"] and long_context[f["start"]:f["end"]] == f["answer"] and 0 < f["score"] <= 1


def test_a_table_of_questions_gets_its_rows_back_with_the_answers(exported, tmp_path, monkeypatch):
    from kpipe.tasks.answer.predict import answer_questions

    _, export = exported
    monkeypatch.chdir(tmp_path)
    rows = pd.DataFrame({"id": ["a", "b", "c"], "q": ["which word follows the ?", "what ?", "who ?"],
                         "passage": ["the actor was great", "a plot", ""]})
    rows.to_csv("in.csv", index=False)
    assert main(["answer", str(export), "--file", "in.csv", "--question-column", "q", "--context-column", "passage",
                 "--output", "out.jsonl"]) == 0
    written = pd.read_json("out.jsonl", lines=True, dtype=False)
    expected = answer_questions(export, list(rows["q"]), ["the actor was great", "a plot", ""])
    assert list(written["id"]) == ["a", "b", "c"] and list(written["answer"]) == [e["answer"] for e in expected]
    assert written["start"].tolist()[2] == -1  # an empty context has no answer
    assert main(["answer", str(export), "--file", "in.csv", "--question-column", "q", "--context-column", "passage",
                 "--output", "out.jsonl"]) == 2  # never overwritten without --overwrite


@pytest.mark.parametrize("arguments, message", [
    (["--question", "who?"], "pass the passage with --context TEXT or with --context-file FILE"),
    (["--context", "text"], "nothing to answer"),
    (["--question", "who?", "--context", "a", "--file", "in.csv"], "not both"),
    (["--file", "in.csv"], "has no column 'question' (its columns: text); pass --question-column NAME"),
    (["--question", "who?", "--context-file", "none.txt"], "--context-file not found: none.txt"),
    (["--question", "who?", "--context", "a", "--n-best", "21"], "--n-best must be between 1 and 20"),
    (["--file", "in.csv", "--n-best", "3"], "--n-best lists candidates for --question answers"),
])
def test_cli_mistakes_are_one_line_and_exit_2(exported, tmp_path, monkeypatch, capsys, arguments, message):
    _, export = exported
    monkeypatch.chdir(tmp_path)
    pd.DataFrame({"text": ["a"]}).to_csv("in.csv", index=False)
    assert main(["answer", str(export), *arguments]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err


def test_n_best_lists_the_likeliest_spans_the_answer_first(exported, capsys):
    _, export = exported
    context = "the film was good and the plot was awful but the crew was great"
    assert main(["answer", str(export), "--question", "what was good ?", "--context", context, "--n-best", "4",
                 "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    candidates = found["n_best"]
    assert len(candidates) == 4 and candidates[0] == {key: found[key] for key in ("answer", "start", "end", "score")}
    assert [c["score"] for c in candidates] == sorted((c["score"] for c in candidates), reverse=True)
    assert len({(c["start"], c["end"]) for c in candidates}) == 4  # each span once
    assert all(context[c["start"]:c["end"]] == c["answer"] for c in candidates)


def test_a_command_of_another_task_is_refused_by_naming_kpipe_answer(exported, capsys):
    _, export = exported
    assert main(["predict", str(export), "some text"]) == 2
    assert "kpipe answer" in capsys.readouterr().err


def misaligned(folder):
    data = squad_articles(6)
    data[2]["paragraphs"][1]["qas"][0]["answers"][0]["answer_start"] += 2
    (folder / "squad.json").write_text(json.dumps({"data": data}))


@pytest.mark.parametrize("write, extra, message", [
    (misaligned, ["--set", 'data.misaligned="error"'], '1 answer(s) are not the text at their answer_start'),
    (lambda folder: (folder / "squad.json").write_text('{"version": "1.1", "articles": []}'), [],
     "is JSON but not SQuAD's shape"),
    (lambda folder: None, [], "data file not found: squad.json; no package carries it: get it from SQuAD"),
])
def test_bad_questions_are_one_line_exit_2_and_nothing_written(exported, tmp_path, monkeypatch, capsys, write, extra,
                                                               message):
    folder, _ = exported
    monkeypatch.chdir(tmp_path)
    shutil.copytree(folder / "checkpoint", tmp_path / "checkpoint")
    write(tmp_path)
    assert main(["run", "squad-minilm", "--set", 'model.preset="checkpoint"', "--set",
                 "preprocessing.sequence_length=48", "--set", "preprocessing.stride=16", "--set",
                 "preprocessing.max_question_tokens=16", *extra]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err
    assert not (tmp_path / "saved_models").exists() or not any((tmp_path / "saved_models").rglob("saved_model.pb"))
