import dataclasses

import pytest

from kpipe.config.strict import apply_overrides, dumps_toml, from_dict, parse_override, to_dict
from kpipe.errors import ConfigError
from kpipe.config.training import TrainingConfig
from kpipe.families.rnn_classifier.config import RNNClassifierConfig


def test_from_dict_builds_dataclass_and_converts_lists_to_tuples():
    config = from_dict(RNNClassifierConfig, {"units": [32, 16], "cell": "gru", "dropout": 0})
    assert config.units == (32, 16)
    assert config.cell == "gru"
    assert config.dropout == 0.0 and isinstance(config.dropout, float)


def test_unknown_key_names_dotted_path_and_suggests():
    with pytest.raises(ConfigError, match=r"unknown key 'training\.epoch' \(did you mean 'training\.epochs'\?\)"):
        from_dict(TrainingConfig, {"epoch": 3}, path="training")


@pytest.mark.parametrize("value, expected", [
    ("3", r"training\.epochs must be an integer\. Received: '3' \(str\)"),
    (2.5, r"training\.epochs must be an integer\. Received: 2\.5 \(float\)"),
    (True, r"training\.epochs must be an integer\. Received: True \(bool\)"),
])
def test_wrong_type_names_field_and_value(value, expected):
    with pytest.raises(ConfigError, match=expected):
        from_dict(TrainingConfig, {"epochs": value}, path="training")


def test_out_of_range_value_names_field_and_value():
    with pytest.raises(ConfigError, match=r"training: `epochs` must be ≥ 1\. Received: epochs=0"):
        from_dict(TrainingConfig, {"epochs": 0}, path="training")


def test_bad_choice_suggests_closest():
    with pytest.raises(ConfigError, match=r"Received: optimizer='adma' \(did you mean 'adam'\?\)"):
        from_dict(TrainingConfig, {"optimizer": "adma"}, path="training")


def test_derived_field_cannot_be_set_from_a_file():
    with pytest.raises(ConfigError, match=r"'model\.num_classes' is set by kpipe from the data"):
        from_dict(RNNClassifierConfig, {"num_classes": 3}, path="model")


def test_configs_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        TrainingConfig().epochs = 3


@pytest.mark.parametrize("text, expected", [
    ("training.epochs=1", ("training.epochs", 1)),
    ("model.dropout=0.5", ("model.dropout", 0.5)),
    ("model.bidirectional=false", ("model.bidirectional", False)),
    ("model.units=[64, 32]", ("model.units", [64, 32])),
    ("data.path=data/train.csv.gz", ("data.path", "data/train.csv.gz")),
    ('data.name="imdb_reviews"', ("data.name", "imdb_reviews")),
])
def test_parse_override_reads_toml_values_or_plain_strings(text, expected):
    assert parse_override(text) == expected


def test_override_without_equals_is_an_error():
    with pytest.raises(ConfigError, match="--set expects KEY=VALUE"):
        parse_override("training.epochs")


def test_apply_overrides_sets_nested_keys_without_touching_the_input():
    raw = {"training": {"epochs": 5}}
    result = apply_overrides(raw, ["training.epochs=1", "data.limit=2000"])
    assert result == {"training": {"epochs": 1}, "data": {"limit": 2000}}
    assert raw == {"training": {"epochs": 5}}


def test_override_below_a_value_is_an_error():
    with pytest.raises(ConfigError, match="'training.epochs' is a value, not a section"):
        apply_overrides({"training": {"epochs": 5}}, ["training.epochs.x=1"])


def test_toml_round_trip_of_a_dataclass():
    import tomllib

    config = RNNClassifierConfig(units=(8, 4), dropout=0.25)
    text = dumps_toml({"model": to_dict(config)})
    again = RNNClassifierConfig(**{k: tuple(v) if isinstance(v, list) else v
                                  for k, v in tomllib.loads(text)["model"].items()})
    assert again == config


def test_a_config_with_nested_sections_round_trips_through_toml():
    import tomllib

    from kpipe.tasks.registry import parse_pipeline_config
    from kpipe.tasks.named_pipelines import load_pipeline

    config = load_pipeline("imdb-ensemble", ["model.ngrams.max_features=1234", "model.sequence.units=[8, 4]"])
    text = config.to_toml()
    assert "[model.ngrams]\n" in text and "[model.sequence]\n" in text
    assert parse_pipeline_config(tomllib.loads(text)) == config


def test_an_ensembles_ngram_member_trains_its_own_way_only_within_the_runs_strategy():
    from kpipe.tasks.named_pipelines import load_pipeline
    from kpipe.config.training import TrainingConfig
    from kpipe.errors import ConfigError

    assert load_pipeline("imdb-ensemble").model.ngrams_training is None  # both members follow [training]
    config = load_pipeline("imdb-ensemble", ["model.ngrams_training.epochs=7", "training.epochs=2"])
    assert config.model.ngrams_training == TrainingConfig(epochs=7)  # a whole table: the rest are defaults
    assert config.training.epochs == 2
    with pytest.raises(ConfigError, match=r"unknown key 'model.ngrams_training.epochz' \(did you mean "
                                          r"'model.ngrams_training.epochs'\?\)"):
        load_pipeline("imdb-ensemble", ["model.ngrams_training.epochz=2"])
    with pytest.raises(ConfigError, match=r"model.ngrams_training.strategy differs from training.strategy; a run's "
                                          r"strategy, worker timeout and refit are \[training\]'s: set it there only"):
        load_pipeline("imdb-ensemble", ['model.ngrams_training.strategy="one_device"'])


def test_an_ensembles_sequence_member_is_chosen_by_its_family():
    from kpipe.tasks.named_pipelines import load_pipeline
    from kpipe.errors import ConfigError
    from kpipe.families.pretrained_classifier.config import PretrainedClassifierConfig
    from kpipe.families.rnn_classifier.config import RNNClassifierConfig

    assert isinstance(load_pipeline("sentiment-ensemble").model.sequence, RNNClassifierConfig)
    config = load_pipeline("sentiment-ensemble", ['model.sequence = {family = "pretrained_classifier", '
                                                  'preset = "all_minilm_l6_v2_en", pooling = "cls"}'])
    assert config.model.sequence == PretrainedClassifierConfig(pooling="cls")
    with pytest.raises(ConfigError, match=r"unknown model.sequence.family 'pretrained' \(did you mean "
                                          r"'pretrained_classifier'\?\); known: rnn_classifier, pretrained_classifier"):
        load_pipeline("sentiment-ensemble", ['model.sequence = {family = "pretrained"}'])
    with pytest.raises(ConfigError, match=r"unknown key 'model.sequence.unitz' \(did you mean 'model.sequence.units'"):
        load_pipeline("sentiment-ensemble", ["model.sequence.unitz=[3]"])


@pytest.mark.parametrize("key", ["learning_rate", "validation_fraction"])
def test_nan_is_out_of_every_range(key):
    import math

    from kpipe.tasks.named_pipelines import load_pipeline

    section = "training" if key == "learning_rate" else "data"
    with pytest.raises(ConfigError, match=rf"`{key}` must be a number, not NaN"):
        load_pipeline("sentiment-bilstm", [f"{section}.{key}=nan"])
    with pytest.raises(ConfigError, match="`dropout` must be a number, not NaN"):
        load_pipeline("sentiment-bilstm", ["model.dropout=nan"])  # accepted before: NaN < 0 and NaN > 1 are False
    assert not math.isnan(load_pipeline("sentiment-bilstm", ["model.dropout=0.5"]).model.dropout)


def test_a_multi_line_description_and_quotes_round_trip_through_the_written_toml(tmp_path):
    """The hand-written writer produced invalid TOML for a multi-line string: kpipe show, config.toml and
    kpipe compare broke on such a description."""
    import tomllib

    from kpipe.tasks.registry import parse_pipeline_config
    from kpipe.tasks.named_pipelines import load_pipeline

    config = load_pipeline("sentiment-bilstm", ['description="""two\nlines with "quotes" and \\ a backslash"""'])
    assert "\n" in config.description
    assert parse_pipeline_config(tomllib.loads(config.to_toml())) == config


def test_xla_is_refused_for_the_multi_worker_loop_when_the_config_is_read():
    from kpipe.errors import ConfigError
    from kpipe.tasks.named_pipelines import load_pipeline

    with pytest.raises(ConfigError, match=r'^training.jit_compile = "on" does not apply to strategy "multi_worker" '
                                          r'\(its training loop, kpipe.training.multi_worker, is not compiled by '
                                          r'XLA\); use "auto" or "off" \(config: sentiment-bilstm'):
        load_pipeline("sentiment-bilstm", ['training.strategy="multi_worker"', 'training.jit_compile="on"'])
    assert load_pipeline("sentiment-bilstm", ['training.strategy="multi_worker"']).training.jit_compile == "auto"
