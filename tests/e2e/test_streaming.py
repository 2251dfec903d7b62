"""Data larger than memory through the real commands: `kpipe run --data 'shards/*'` streams the shards (the
out-of-core baseline beside the model, the shards in the report), and `kpipe predict --file 'shards/*' --output
FOLDER` writes one output shard per input shard, skipping finished ones on a rerun; mistakes are one line."""

import json

import pandas as pd
import pytest

from tests.helpers import kpipe, kpipe_in_process, new_user_env
from tests.made_up_data import synthetic_reviews

pytestmark = pytest.mark.slow

SMALL = ["--set", "model.max_features=2000", "--set", "model.char_ngrams=0", "--set", "training.epochs=3",
         "--set", 'model.weighting="tfidf"', "--set", "model.hidden_units=8", "--set", "data.fit_sample=500"]


@pytest.fixture(scope="module")
def streamed(tmp_path_factory):
    folder = tmp_path_factory.mktemp("streaming")
    shards = folder / "shards"
    shards.mkdir()
    reviews = synthetic_reviews(1200)
    for i, part in enumerate([reviews.iloc[:500], reviews.iloc[500:900], reviews.iloc[900:]]):
        if i == 1:
            part.to_csv(shards / f"part-{i}.csv.gz", index=False)
        else:
            part.to_parquet(shards / f"part-{i}.parquet", index=False)
    run = kpipe("run", "sentiment-bigrams", "--data", str(shards / "*"), *SMALL, cwd=folder, env=new_user_env())
    return folder, shards, run


def test_a_run_on_shards_streams_them_and_reports_the_out_of_core_baseline(streamed):
    folder, _, run = streamed
    assert run.returncode == 0, run.stderr[-3000:]
    metrics = json.loads((folder / "saved_models/sentiment-bigrams/1/metrics.json").read_text())
    data = metrics["data"]
    assert data["shards"] == 3 and data["skipped_shards"] == [] and data["fitting_sample"] == 500
    assert data["fit_vocabulary"] == "counts"
    assert data["train"] + data["validation"] + data["test"] == 1200
    assert metrics["baseline"]["name"] == "hashing + SGD logistic (out-of-core)"
    assert metrics["accuracy"] > 0.8 and metrics["baseline"]["accuracy"] > 0.8  # the reviews' words decide
    assert "hashing + SGD logistic (out-of-core)" in run.stdout
    assert "preprocessing fitted on a seeded sample of 500 training rows" in run.stderr
    # the n-gram vocabulary is counted over every training row, not the 500-row sample
    assert "ngram_vectorization: counted over every training row" in run.stderr


def test_predict_over_shards_writes_one_output_per_input_and_resumes(streamed):
    folder, shards, _ = streamed
    command = ("predict", "saved_models/sentiment-bigrams/1", "--file", str(shards / "*"), "--output", "answers")
    done = kpipe(*command, cwd=folder, env=new_user_env())
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Wrote 3 shards (1200 rows)" in done.stdout
    outputs = sorted(p.name for p in (folder / "answers").iterdir() if not p.name.startswith("."))
    assert outputs == ["part-0.parquet", "part-1.csv", "part-2.parquet"]
    first = pd.read_parquet(folder / "answers/part-0.parquet")
    assert list(first.columns[:2]) == ["text", "label"] and len(first) == 500
    assert (first["predicted_label"] == first["label"].astype(str)).mean() > 0.8
    (folder / "answers/part-1.csv").unlink()  # as if the run had been killed while writing it
    again = kpipe(*command, cwd=folder, env=new_user_env())
    assert again.returncode == 0 and "Wrote 1 shard (400 rows)" in again.stdout
    assert "skipped 2 finished by an earlier run" in again.stdout
    assert len(pd.read_csv(folder / "answers/part-1.csv")) == 400


def test_a_glob_that_matches_nothing_is_one_line_and_writes_nothing(tmp_path, capsys):
    code, _ = kpipe_in_process("run", "sentiment-bigrams", "--data", "missing/*.parquet", cwd=tmp_path)
    assert code == 2
    assert capsys.readouterr().err.strip() == (
        "kpipe: error: no shard matches 'missing/*.parquet': give a glob of table files (e.g. 'reviews/*.parquet') "
        "or a folder of them (.csv, .tsv, .parquet, .pq, .jsonl, optionally compressed, or .tfrecord, .tfrecord.gz)")
    assert not list(tmp_path.iterdir())  # nothing written


def test_a_recurrent_model_trains_a_bounded_number_of_batches_on_shards_and_reuses_its_counted_vocabulary(
        streamed, caplog):
    import logging

    folder, shards, _ = streamed
    small = ["--set", "preprocessing.vocabulary_size=300", "--set", "preprocessing.sequence_length=40",
             "--set", "model.embedding_dim=8", "--set", "model.units=[8]", "--set", "training.epochs=1",
             "--set", "training.steps_per_epoch=3", "--set", "data.fit_sample=500"]
    with caplog.at_level(logging.INFO):
        code, printed = kpipe_in_process("run", "imdb-bilstm", "--data", str(shards / "*"), *small, cwd=folder)
        assert code == 0, printed[-2000:]
        assert "text_vectorization: counted over every training row" in caplog.text
        caplog.clear()
        code, printed = kpipe_in_process("run", "imdb-bilstm", "--data", str(shards / "*"), *small,
                                         "--set", "training.seed=2", cwd=folder)
    assert code == 0, printed[-2000:]
    assert "Vocabulary from the cache" in caplog.text and "text_vectorization: counted" not in caplog.text
    first, second = ((folder / f"saved_models/imdb-bilstm/{v}/vocabulary.txt").read_text().splitlines() for v in (1, 2))
    assert first[:2] == ["", "[UNK]"] and "good" in first and second == first
