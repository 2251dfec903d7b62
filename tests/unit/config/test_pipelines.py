import pytest

from kpipe.errors import ConfigError
from kpipe.tasks.named_pipelines import list_pipelines, load_pipeline, registry


def test_bundled_pipelines_are_registered_and_valid():
    names = set(registry())
    assert {"sentiment-bilstm", "imdb-bilstm", "sentiment-glove", "imdb-glove"} <= names
    entries = {e.name: e for e in list_pipelines()}
    assert entries["sentiment-bilstm"].task == "classify"
    assert entries["sentiment-bilstm"].dataset == "embedded:tweets-sentiment"
    assert entries["imdb-bilstm"].dataset == "tfds:imdb_reviews"
    assert all(e.description for e in entries.values())
    glove = load_pipeline("imdb-glove")
    assert glove.model.pretrained_embeddings == "glove:6B.50d" and glove.model.embedding_training == "frozen"


def test_overrides_pass_through_validation():
    config = load_pipeline("sentiment-bilstm", ["training.epochs=1", "data.limit=2000"])
    assert config.training.epochs == 1
    assert config.data.limit == 2000


def test_unknown_pipeline_lists_known_ones():
    with pytest.raises(ConfigError, match=r"unknown pipeline 'sentiment-bilstn' \(did you mean 'sentiment-bilstm'\?\)"
                                          r"; known pipelines: .*imdb-bilstm.*sentiment-bilstm"):
        load_pipeline("sentiment-bilstn")


def test_unknown_override_key_mentions_the_override():
    with pytest.raises(ConfigError, match=r"unknown key 'model\.unit' \(did you mean 'model\.units'\?\).*"
                                          r"overrides: model\.unit=3"):
        load_pipeline("sentiment-bilstm", ["model.unit=3"])


def test_an_override_of_the_family_leaves_out_the_pipelines_settings_it_does_not_take(caplog):
    """lm-bible's [model] is gpt's: `--set model.family=rnn_lm` runs the LSTM language model with its own defaults
    (and the settings both families take, e.g. dropout), saying which were left out; a key the override names
    itself is still refused."""
    from kpipe.families.rnn_lm.config import RNNLanguageModelConfig

    gpt = load_pipeline("lm-bible")
    config = load_pipeline("lm-bible", ['model.family="rnn_lm"', "model.units=[32]"])
    assert type(config.model) is RNNLanguageModelConfig
    assert config.model.units == (32,) and config.model.dropout == gpt.model.dropout
    assert config.model.cell == RNNLanguageModelConfig().cell
    assert "settings that rnn_lm does not take are left out: hidden_dim, intermediate_dim, num_heads, num_layers" \
        in caplog.text
    with pytest.raises(ConfigError, match=r"unknown key 'model\.num_layers'.*overrides: model\.family=.*"):
        load_pipeline("lm-bible", ['model.family="rnn_lm"', "model.num_layers=3"])
    caplog.clear()
    assert load_pipeline("lm-bible", ['model.family="gpt"']) == gpt and not caplog.text  # the family it has


def test_config_file_path_works_and_unknown_top_level_key_is_rejected(tmp_path):
    good = tmp_path / "mine.toml"
    good.write_text('name = "mine"\ntask = "classify"\n[data]\nsource = "file"\npath = "x.csv"\n')
    config = load_pipeline(str(good))
    assert config.name == "mine" and config.model.family == "rnn_classifier"
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "mine"\ntask = "classify"\n[trainig]\nepochs = 1\n')
    with pytest.raises(ConfigError, match=r"unknown key 'trainig' \(did you mean 'training'\?\)"):
        load_pipeline(str(bad))


def test_unknown_task_and_family_are_rejected(tmp_path):
    path = tmp_path / "x.toml"
    path.write_text('name = "x"\ntask = "clasify"\n')
    with pytest.raises(ConfigError, match=r"unknown task 'clasify' \(did you mean 'classify'\?\)"):
        load_pipeline(str(path))
    path.write_text('name = "x"\ntask = "classify"\n[model]\nfamily = "rnn"\n')
    with pytest.raises(ConfigError, match="unknown model.family 'rnn'"):
        load_pipeline(str(path))


def test_resolved_config_round_trips_through_toml(tmp_path):
    config = load_pipeline("imdb-bilstm", ["model.units=[32, 16]"])
    path = tmp_path / "resolved.toml"
    path.write_text(config.to_toml())
    assert load_pipeline(str(path)) == config
    assert config.fingerprint() == load_pipeline(str(path)).fingerprint()
    assert config.fingerprint() != load_pipeline("imdb-bilstm").fingerprint()


@pytest.mark.parametrize("old, new", [("electricity-lstm", "electricity-seasonal-ar"), ("weather-gru", "weather-ar")])
def test_a_renamed_pipeline_runs_under_its_old_name_with_one_warning(caplog, old, new):
    from kpipe.tasks.named_pipelines import RENAMED, load_pipeline

    with caplog.at_level("WARNING", logger="kpipe.tasks.named_pipelines"):
        config = load_pipeline(old)
    assert config.name == new == RENAMED[old][0]
    assert [r.getMessage().split(" (")[0] for r in caplog.records] == [f"Pipeline '{old}' is now '{new}'"]
