"""`kpipe export` refuses, in one line and before TensorFlow loads, what it cannot write."""

import json

from kpipe.cli.commands import main


def version_folder(tmp_path, **manifest):
    folder = tmp_path / "saved_models" / "names-char" / "1"
    folder.mkdir(parents=True)
    (folder / "saved_model.pb").write_bytes(b"")
    (folder / "kpipe.json").write_text(json.dumps(manifest))
    return folder


def test_a_family_that_does_not_export_is_named_with_those_that_do(tmp_path, capsys):
    folder = version_folder(tmp_path, task="translate", family="seq2seq_attention")
    assert main(["export", str(folder), "--format", "onnx"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"kpipe: error: {folder} is a translate export of family seq2seq_attention, which kpipe "
                          "export does not write yet; it writes ONNX and LiteRT for answer: pretrained_reader; classify: rnn_classifier, "
                          "transformer_classifier, bag_of_ngrams, ensemble, pretrained_classifier; forecast: "
                          "rnn_forecaster; generate: char_rnn, char_transformer; lm: gpt, rnn_lm; tag: rnn_tagger; "
                          "word2vec: skipgram, cbow")
    assert err.count("\n") == 1 and "seq2seq" not in err.split("; it writes")[1]
    assert sorted(p.name for p in folder.parent.iterdir()) == ["1"]  # nothing written


def test_an_n_gram_export_without_its_idf_says_to_run_the_pipeline_again(tmp_path, capsys):
    folder = version_folder(tmp_path, task="classify", family="bag_of_ngrams")
    (folder / "config.toml").write_text('[data]\n[preprocessing]\nstandardize = "lower"\nsplit = "whitespace"\n'
                                        '[model]\nfamily = "bag_of_ngrams"\nngrams = 2\nchar_ngrams = 0\n'
                                        'weighting = "tfidf"\n')
    assert main(["export", str(folder), "--format", "litert"]) == 2
    assert "without its n-gram idf (idf.npy); run the pipeline again" in capsys.readouterr().err


def test_an_export_of_hashed_n_grams_is_refused_with_the_setting_to_change(tmp_path, capsys):
    folder = version_folder(tmp_path, task="classify", family="bag_of_ngrams")
    (folder / "config.toml").write_text('[data]\n[preprocessing]\nstandardize = "lower"\nsplit = "whitespace"\n'
                                        '[model]\nfamily = "bag_of_ngrams"\nngrams = 2\nchar_ngrams = 0\n'
                                        'weighting = "tfidf"\nhashing = true\n')
    (folder / "idf.npy").write_bytes(b"")
    assert main(["export", str(folder), "--format", "onnx"]) == 2
    err = capsys.readouterr().err
    assert "hashes its n-grams (model.hashing=true)" in err and "model.hashing=false" in err
    assert err.count("\n") == 1 and sorted(p.name for p in folder.parent.iterdir()) == ["1"]
