"""The task registry is the one table of tasks and families: what each row says is what the code does, and the
rules a config alone decides are reported when the config is read, before TensorFlow loads."""

import importlib
import subprocess
import sys
import typing

import pytest

from kpipe.config.training import EARLY_STOPPING_MONITORS
from kpipe.errors import ConfigError
from kpipe.families.ensemble.config import EnsembleClassifierConfig
from kpipe.families.spec import resolve
from kpipe.tasks.named_pipelines import load_pipeline, pipeline_path, registry
from kpipe.tasks.registry import TASKS
from kpipe.tuning.study import tuning_metric


def every_family():
    return [(task, family) for task in TASKS.values() for family in task.families]


@pytest.mark.parametrize("task, family", every_family(), ids=lambda x: x.name)
def test_every_family_is_declared_in_its_own_folder_and_names_importable_code(task, family):
    """The spec's builder and decoder exist (a renamed function fails here, not in a user's run), and the spec is
    the one its folder's __init__ declares."""
    folder = importlib.import_module(family.config.__module__.rsplit(".", 1)[0])
    assert family in [value for value in vars(folder).values() if value.__class__.__name__ == "FamilySpec"]
    for target in filter(None, (family.builder, family.decoder, task.trainers.get(family.name))):
        assert callable(resolve(target)), target
    assert family.config().family == family.name or family.name in ("skipgram", "cbow")


def test_families_that_train_differently_each_name_a_trainer_and_no_trainer_names_a_stranger():
    for task in TASKS.values():
        assert set(task.trainers) <= set(task.models), task.name
    classify = TASKS["classify"]
    assert set(classify.trainers) == set(classify.models) - {"ensemble"}  # the ensemble trains its members


def test_the_ensemble_offers_exactly_the_families_flagged_as_members():
    """The union in the ensemble's config (a type, read by the strict parser) against the flags of the table."""
    sequence = typing.get_type_hints(EnsembleClassifierConfig)["sequence"]
    offered = {cls.__name__ for cls in typing.get_args(sequence)}
    flagged = {family.config.__name__ for family in TASKS["classify"].families if family.ensemble_member}
    assert offered == flagged


def test_every_early_stopping_monitor_is_logged_by_some_task():
    logged = {monitor for task in TASKS.values() for monitor in task.monitors}
    assert logged == set(EARLY_STOPPING_MONITORS) - {"val_loss"}


@pytest.mark.parametrize("pipeline", sorted(registry()))
def test_every_pipeline_has_a_tuning_metric_or_says_in_one_line_why_not(pipeline):
    """`kpipe tune minilm-embeddings` used to end in a KeyError: the task-to-metric dict lacked `embed`."""
    config = load_pipeline(pipeline, [])
    try:
        metric = tuning_metric(config)
    except ConfigError as error:
        assert config.task in ("embed", "word2vec") and "\n" not in str(error)
    else:
        assert metric.startswith("val_")


@pytest.mark.parametrize("pipeline", sorted(name for name in registry()
                                            if "[tune]" in pipeline_path(name).read_text(encoding="utf-8")))
def test_every_shipped_search_space_offers_only_settings_its_pipeline_accepts(pipeline):
    """`kpipe tune PIPELINE` with the pipeline's own [tune] table, checked here and not at a user's first study
    (ner-tweets' table held its training seed, so `kpipe tune ner-tweets` refused it)."""
    from kpipe.tuning.space import check_space, load_space

    dimensions = load_space(pipeline, None)
    assert dimensions
    check_space(pipeline, [], dimensions)  # raises ConfigError naming the value the config refuses
    assert tuning_metric(load_pipeline(pipeline, [])).startswith("val_")


def test_the_tuning_metric_follows_the_data_and_the_monitor():
    assert tuning_metric(load_pipeline("names-countries", [])) == "val_micro_f1"
    assert tuning_metric(load_pipeline("sentiment-bigrams", [])) == "val_accuracy"
    assert tuning_metric(load_pipeline("g2p-attention", ['training.early_stopping_monitor="val_loss"'])) == "val_loss"


@pytest.mark.parametrize("pipeline, overrides, message", [
    ("sentiment-bigrams", ['data.label_separator="|"', 'model.weighting="nb"', "model.hidden_units=8"],
     "model.weighting='nb' with several labels per text weighs each label's n-grams apart"),
    ("sentiment-bigrams", ['data.source="shards"', 'data.path="tags/*.csv"', 'data.label_separator="|"',
                           'model.weighting="nb"'], "counts n-grams per label in memory"),
    ("sentiment-bigrams", ['data.source="file"', 'data.path="pairs.csv"', 'data.text_pair_column="claim"',
                           'model.weighting="nb"'], "model.weighting='nb' weighs the n-grams of one text"),
    ("sentiment-transformer", ['data.source="file"', 'data.path="pairs.csv"', 'data.text_pair_column="claim"'],
     "model.family='transformer_classifier' reads one text; for pairs of texts"),
    ("sentiment-ensemble", ['data.source="shards"', 'data.path="shards/*.parquet"'],
     "model.family='ensemble' reads its data in memory; sharded data"),
    ("names-countries-ensemble", ['model.ngrams.weighting="nb"', "model.ngrams.hidden_units=4"],
     "model.ngrams.weighting='nb' with several labels"),
    ("sentiment-bigrams", ['training.early_stopping_monitor="val_bleu"'], "is logged by translate pipelines only"),
    ("minilm-embeddings", ['data.source="shards"', 'data.path="shards/*.parquet"'],  # reliability finding 9
     "the embed task reads its texts in memory; sharded data"),
])
def test_rules_the_config_alone_decides_are_reported_when_it_is_read(pipeline, overrides, message):
    with pytest.raises(ConfigError) as raised:
        load_pipeline(pipeline, overrides)
    assert message in str(raised.value)


def test_reading_a_config_imports_no_tensorflow():
    code = ("import sys; from kpipe.tasks.named_pipelines import load_pipeline; "
            "[load_pipeline(p, []) for p in ('sentiment-bilstm', 'g2p-attention', 'names-char')]; "
            "assert 'tensorflow' not in sys.modules and 'keras' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)
