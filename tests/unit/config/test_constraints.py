"""Config rules declared on fields (`kpipe.config.constraints`): every declared rule is enforced, on every config
section of every task, whether the section is made from TOML or in Python; and the reference shows each."""

from __future__ import annotations

import dataclasses

import pytest

from kpipe.config.constraints import Each, LayerSizes, OneOf, OrAuto, Range, check_fields, rule_of, setting
from kpipe.config.pipeline import EvaluationConfig, ExportConfig
from kpipe.config.strict import from_dict
from kpipe.config.training import TrainingConfig
from kpipe.errors import ConfigError
from kpipe.tasks.registry import TASKS


def config_sections() -> list[type]:
    """Every config dataclass a pipeline can hold: each task's data, preprocessing and model sections, the common
    ones, and the tables nested in them."""
    found: list[type] = []
    todo = [TrainingConfig, EvaluationConfig, ExportConfig]
    for spec in TASKS.values():
        todo += [spec.data, spec.preprocessing, *spec.models.values()]
    while todo:
        cls = todo.pop()
        if cls in found:
            continue
        found.append(cls)
        for field in dataclasses.fields(cls):
            default = field.default
            if dataclasses.is_dataclass(default):
                todo.append(type(default))
    return found


def breaking(rule, owner: type):
    """A value `rule` refuses."""
    if isinstance(rule, OneOf):
        return "no-such-choice"
    if isinstance(rule, Range):
        if rule.low is not None:
            return rule.low - 1 if rule.low_inclusive else rule.low
        return rule.high + 1 if rule.high_inclusive else rule.high
    if isinstance(rule, Each):
        return (breaking(rule.rule, owner),)
    if isinstance(rule, LayerSizes):
        return ()
    if isinstance(rule, OrAuto):
        value = breaking(rule.rule, owner)
        return value if value != rule.auto else value - 1
    raise AssertionError(f"no breaking value for {rule!r}")


RULED = [(cls, field) for cls in config_sections() for field in dataclasses.fields(cls) if rule_of(field)]


def test_the_sections_declare_rules():
    assert len(config_sections()) >= 30
    assert len(RULED) >= 200  # most keys have one; a rewrite that drops them fails here


@pytest.mark.parametrize("cls, field", RULED, ids=[f"{c.__name__}.{f.name}" for c, f in RULED])
def test_every_declared_rule_refuses_a_value_outside_it_in_python_and_from_toml(cls, field):
    bad = breaking(rule_of(field), cls)
    with pytest.raises(ValueError, match=f"`{field.name}`"):
        cls(**{field.name: bad})
    if not field.metadata.get("derived"):  # a file cannot set derived keys at all
        with pytest.raises(ConfigError, match=field.name):
            from_dict(cls, {field.name: list(bad) if isinstance(bad, tuple) else bad})


@pytest.mark.parametrize("cls", config_sections(), ids=lambda c: c.__name__)
def test_a_key_redeclared_with_another_default_keeps_its_rule(cls):
    """A dataclass field redeclared in a subclass replaces the base's field, rule and all."""
    ruled_above = {f.name for base in cls.__mro__[1:] if dataclasses.is_dataclass(base)
                   for f in dataclasses.fields(base) if rule_of(f)}
    assert not [f.name for f in dataclasses.fields(cls) if f.name in ruled_above and not rule_of(f)]


def test_every_default_follows_its_own_rule():
    for cls, field in RULED:
        rule_of(field).check(field.name, field.default, cls)
    check_fields(TrainingConfig())


def test_rules_describe_what_they_accept():
    assert OneOf(("a", "b")).describe(object) == '`"a"`, `"b"`'
    assert Range(low=0.0, high=1.0, high_inclusive=False).describe(object) == "≥ 0.0 and < 1.0"
    assert Range(low=0, low_inclusive=False).describe(object) == "> 0"
    assert Each(Range(low=2)).describe(object) == "each ≥ 2"
    assert OrAuto(-1.0, Range(low=0.0, high=1.0), "chosen on validation").describe(object) == (
        "`-1.0` (chosen on validation) or ≥ 0.0 and ≤ 1.0")


def test_a_choice_listed_by_the_class_follows_the_subclass():
    from kpipe.datasets.corpus import CorpusDataConfig
    from kpipe.datasets.text_classification import TextClassificationDataConfig

    source = next(f for f in dataclasses.fields(CorpusDataConfig) if f.name == "source")
    assert rule_of(source).describe(CorpusDataConfig) == '`"embedded"`, `"file"`'
    assert '"shards"' in rule_of(source).describe(TextClassificationDataConfig)
    with pytest.raises(ValueError, match="must be one of 'embedded', 'file'"):
        CorpusDataConfig(source="shards", path="x")


def test_a_rule_is_checked_before_the_sections_own_rules_across_fields():
    from kpipe.families.gpt.config import GPTConfig

    with pytest.raises(ValueError, match=r"`num_heads` must be ≥ 1"):
        GPTConfig(num_heads=0)  # the range first: the divisibility rule would divide by zero
    with pytest.raises(ValueError, match="`num_heads` must divide `hidden_dim`"):
        GPTConfig(hidden_dim=100, num_heads=3)


def test_a_language_models_scoring_stride_is_at_most_its_context_and_0_means_half():
    from kpipe.preprocessing.configs import LanguageModelPreprocessingConfig
    from kpipe.tasks.named_pipelines import load_pipeline

    assert LanguageModelPreprocessingConfig(sequence_length=100).score_stride == 50
    assert LanguageModelPreprocessingConfig(sequence_length=100, stride=100).score_stride == 100
    with pytest.raises(ConfigError, match=r"`stride` must be ≤ 128\. Received: stride=500"):  # before TensorFlow
        load_pipeline("lm-bible", ["preprocessing.stride=500"])


def test_setting_keeps_the_derived_flag_and_the_rule():
    field = setting(3, Range(low=2), derived=True)
    assert field.metadata["derived"] and rule_of(field) == Range(low=2)


def test_a_renamed_key_is_read_under_its_new_name_with_a_one_line_warning(caplog):
    from kpipe.families.seq2seq_transformer.config import Seq2SeqTransformerConfig
    from kpipe.tasks.named_pipelines import load_pipeline

    caplog.set_level("WARNING")
    config = load_pipeline("translate-eng-spa", ["model.embedding_dim=64"])  # the old name over the file's new one
    assert config.model.hidden_dim == 64
    (warning,) = [r.getMessage() for r in caplog.records]
    assert warning.startswith("'model.embedding_dim' is now 'model.hidden_dim'") and "\n" not in warning
    assert from_dict(Seq2SeqTransformerConfig, {"hidden_dim": 32, "num_heads": 2}).hidden_dim == 32
    with pytest.raises(ConfigError, match="unknown key 'embedding_size'"):  # only the listed old names
        from_dict(Seq2SeqTransformerConfig, {"embedding_size": 32})
