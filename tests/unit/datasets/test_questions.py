"""Reading questions for the answer task: SQuAD JSON (v1.1 and v2.0) and tables, misaligned answers (error, fix,
drop), the split by article, and one-line errors for bad files."""

import gzip
import json

import pandas as pd
import pytest

from kpipe.datasets.questions import QuestionsDataConfig, load_questions
from kpipe.errors import DataError
from tests.made_up_data import squad_articles, write_squad_json


def load(path, **kwargs):
    return load_questions(QuestionsDataConfig(path=str(path), **kwargs))


def test_squad_json_is_split_by_article_never_by_question(tmp_path):
    splits = load(write_squad_json(tmp_path / "squad.json", articles=30), validation_fraction=0.2,
                  test_fraction=0.2)
    assert sum(len(getattr(splits, s)) for s in ("train", "validation", "test")) == 30 * 3 * 4
    articles = {s: {q.article for q in getattr(splits, s)} for s in ("train", "validation", "test")}
    assert all(articles.values())
    assert not (articles["train"] & articles["test"]) and not (articles["train"] & articles["validation"])
    contexts = {s: {q.context for q in getattr(splits, s)} for s in ("train", "test")}
    assert not contexts["train"] & contexts["test"]
    first = splits.train[0]
    text, start = first.answers[0]
    assert first.context[start:start + len(text)] == text


def test_squad_v2_unanswerable_questions_have_no_answers(tmp_path):
    data = squad_articles(10)
    for article in data:
        article["paragraphs"][0]["qas"].append({"id": f"none-{article['title']}", "question": "who is it ?",
                                                "answers": [], "is_impossible": True})
    path = tmp_path / "v2.json.gz"
    path.write_bytes(gzip.compress(json.dumps({"version": "v2.0", "data": data}).encode()))
    splits = load(path, test_fraction=0.3)
    assert splits.sizes()["unanswerable"] == 10
    assert all(not q.answers for q in splits.train + splits.test if q.id.startswith("none-"))


@pytest.mark.parametrize("misaligned, kept, fixed, dropped", [("fix", 2, 1, 1), ("drop", 1, 0, 2)])
def test_misaligned_answers_are_fixed_or_dropped_and_counted(tmp_path, misaligned, kept, fixed, dropped):
    data = squad_articles(6, questions=1)
    qas = data[0]["paragraphs"][0]["qas"]
    context = data[0]["paragraphs"][0]["context"]
    word = context.split()[2]
    qas[0]["answers"] = [{"text": word, "answer_start": context.index(word) + 1},      # off by one: fixable
                         {"text": "nowhere", "answer_start": 0},                          # not in the context
                         {"text": word, "answer_start": context.index(word)}]             # right
    (tmp_path / "s.json").write_text(json.dumps({"data": data}))
    splits = load(tmp_path / "s.json", misaligned=misaligned, test_fraction=0.5, validation_fraction=0.0)
    q = next(q for q in splits.train + splits.test if q.id == qas[0]["id"])
    assert len(q.answers) == kept and all(q.context[s:s + len(t)] == t for t, s in q.answers)
    assert splits.sizes()["misaligned_answers"] == {"fixed": fixed, "dropped": dropped}


def test_misaligned_answers_are_an_error_by_default_naming_how_many(tmp_path):
    data = squad_articles(4)
    data[1]["paragraphs"][0]["qas"][0]["answers"][0]["answer_start"] += 3
    (tmp_path / "s.json").write_text(json.dumps({"data": data}))
    with pytest.raises(DataError, match=r"^1 answer\(s\) are not the text at their answer_start .*article 1.*"
                                        r"data.misaligned = \"fix\""):
        load(tmp_path / "s.json")


def test_tables_take_several_gold_answers_as_rows_or_lists(tmp_path):
    rows = []
    for a in range(8):
        context = f"alpha beta gamma delta {a}"
        rows += [{"id": f"q{a}", "title": f"t{a}", "question": "which letter ?", "context": context,
                  "answer_text": "beta", "answer_start": 6},
                 {"id": f"q{a}", "title": f"t{a}", "question": "which letter ?", "context": context,
                  "answer_text": "beta gamma", "answer_start": 6}]
    pd.DataFrame(rows).to_csv(tmp_path / "q.csv", index=False)
    splits = load(tmp_path / "q.csv", test_fraction=0.4, validation_fraction=0.0)
    assert all(q.answers == (("beta", 6), ("beta gamma", 6)) for q in splits.train + splits.test)
    listed = pd.DataFrame([{"question": "which ?", "context": f"alpha beta {a}", "title": f"t{a}",
                            "answer_text": ["alpha", "beta"], "answer_start": [0, 6]} for a in range(8)])
    listed.to_json(tmp_path / "q.jsonl", orient="records", lines=True)
    splits = load(tmp_path / "q.jsonl", test_fraction=0.4, validation_fraction=0.0)
    assert all(q.answers == (("alpha", 0), ("beta", 6)) for q in splits.train + splits.test)


def test_a_glob_reads_several_files(tmp_path):
    write_squad_json(tmp_path / "a.json", articles=5, seed=1)
    write_squad_json(tmp_path / "b.json", articles=5, seed=2)
    splits = load(tmp_path / "*.json", test_fraction=0.3)
    assert len(splits.train) + len(splits.validation) + len(splits.test) == 2 * 5 * 3 * 4
    # the report's data line: a glob of files read whole, not the streamed "shards" of the classifiers
    glob = str(tmp_path / "*.json")
    assert QuestionsDataConfig(source="shards", path=glob).describe() == f"files:{glob}"
    assert QuestionsDataConfig(path=str(tmp_path / "a.json")).describe() == f"file:{tmp_path / 'a.json'}"


@pytest.mark.parametrize("write, message", [
    (lambda p: p.write_text('{"version": "1.1", "articles": []}'), "is JSON but not SQuAD's shape"),
    (lambda p: p.write_text("not json"), "is not JSON"),
    (lambda p: p.write_text(json.dumps({"data": [{"title": "t", "paragraphs": [{"context": " ", "qas": []}]}]})),
     "empty or missing context"),
    (lambda p: p.write_bytes(b'{"data": "caf\xe9"}'), "is not valid utf-8"),
])
def test_bad_files_are_one_line_errors(tmp_path, write, message):
    path = tmp_path / "bad.json"
    write(path)
    with pytest.raises(DataError, match=message) as error:
        load(path)
    assert "\n" not in str(error.value)


def test_a_table_without_a_column_names_it(tmp_path):
    pd.DataFrame({"question": ["q"], "context": ["c"], "answer": ["c"]}).to_csv(tmp_path / "q.csv", index=False)
    with pytest.raises(DataError, match="has no column answer_text, answer_start"):
        load(tmp_path / "q.csv")


def test_a_missing_file_or_glob_says_so(tmp_path):
    with pytest.raises(DataError, match="data file not found"):
        load(tmp_path / "none-*.json")
