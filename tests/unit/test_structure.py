"""Where facts live: config parsing without TensorFlow, preprocessing without models, one registry of data."""

import subprocess
import sys

import pytest

from kpipe.datasets import embedded
from kpipe.errors import DataError


def modules_after(code):
    run = subprocess.run([sys.executable, "-c", code + "\nimport sys\nprint(' '.join(sorted(sys.modules)))"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    return set(run.stdout.split())


def test_a_bad_override_is_reported_before_tensorflow_loads():
    loaded = modules_after(
        "from kpipe.cli.commands import main\n"
        "try:\n    main(['run', 'sentiment-bilstm', '--set', 'training.epoch=1'])\n"
        "except SystemExit:\n    pass\n")
    assert "tensorflow" not in loaded and "keras" not in loaded
    assert "kpipe.tasks.registry" in loaded  # the config was parsed


def test_every_pipeline_config_parses_without_tensorflow():
    loaded = modules_after("from kpipe.tasks.named_pipelines import list_pipelines\nassert len(list_pipelines()) >= 11")
    assert "tensorflow" not in loaded and "keras" not in loaded


@pytest.mark.slow
def test_preprocessing_takes_reserved_ids_from_kpipe_tokens_not_from_model_families():
    loaded = modules_after("import kpipe.preprocessing.token_pairs, kpipe.preprocessing.masked_lm, "
                           "kpipe.preprocessing.text")
    assert not any(name.startswith("kpipe.families.") for name in loaded), sorted(
        name for name in loaded if name.startswith("kpipe.families"))


def test_every_embedded_dataset_has_a_licence_and_a_reader():
    import importlib

    assert {d.kind for d in embedded.EMBEDDED_DATASETS.values()} == {
        "text classification", "corpus", "names", "pairs", "time series", "tagged words"}
    for dataset in embedded.EMBEDDED_DATASETS.values():
        assert dataset.licence and dataset.package and dataset.description
        module, function = dataset.reader.split(":")
        assert callable(getattr(importlib.import_module(module), function)), dataset.name


def test_an_unknown_embedded_name_lists_the_known_ones_of_its_kind():
    with pytest.raises(DataError, match=r"unknown embedded time series data 'tayler' \(did you mean 'taylor'\?\); "
                                        r"known: taylor, seattle-weather$"):
        embedded.read("tayler", "time series")


@pytest.mark.slow
def test_importing_a_task_changes_nothing_outside_it():
    """Importing kpipe.tasks.classify used to set TF_XLA_FLAGS, and kpipe.tasks.translate to filter TensorFlow's
    logger: a library import must not (running a pipeline or loading an export does what it needs)."""
    code = ("import os, logging\nos.environ.pop('TF_XLA_FLAGS', None)\n"
            "import kpipe.tasks.classify.run, kpipe.tasks.translate.run\nimport tensorflow as tf\n"
            "print(repr(os.environ.get('TF_XLA_FLAGS')), len(tf.get_logger().filters))")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split() == ["None", "0"]


def test_the_training_modules_are_the_train_extras_packages_a_runtime_install_lacks():
    """`kpipe.dependencies.TRAINING_MODULES` (what a runtime-only install is told to get with kpipe[train]) and
    pyproject's `train` extra are one fact in two places: every package of the extra that the `runtime` extra does
    not bring is named there by its import name, and nothing else is."""
    import re
    import tomllib
    from pathlib import Path

    from kpipe.dependencies import TRAINING_MODULES

    extras = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text(encoding="utf-8"))[
        "project"]["optional-dependencies"]

    def names(requirements):
        return {re.match(r"[A-Za-z0-9_.\-]+", r).group(0).lower().replace("-", "_") for r in requirements}

    import_names = {"scikit_learn": "sklearn", "adjusttext": "adjustText"}
    shims = {"importlib_resources"}  # imported only by tensorflow-datasets, itself a training module
    runtime_only = names(extras["runtime"]) | names(extras["serve"])
    expected = {import_names.get(n, n) for n in names(extras["train"]) - runtime_only - shims}
    assert TRAINING_MODULES == expected
