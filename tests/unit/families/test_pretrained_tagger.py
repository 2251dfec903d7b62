"""The pretrained tagger's casing feature: with `model.casing` a word's tags depend on its casing class as well as
on the (uncased) encoder's features; without it the model takes no casing."""

import numpy as np

from kpipe.families.pretrained_tagger.config import PretrainedTaggerConfig
from kpipe.families.pretrained_tagger.model import build_pretrained_tagger
from tests.checkpoints import tiny_backbone
from tests.unit.families.harness import example_inputs


def test_with_casing_the_tags_depend_on_each_words_casing_class():
    model = build_pretrained_tagger(PretrainedTaggerConfig(preset="tiny", num_tags=3, dropout=0.0, casing=True),
                                    tiny_backbone(0))
    inputs = example_inputs(model)
    lower, upper = dict(inputs, casing=np.full_like(inputs["casing"], 3)), dict(inputs, casing=np.full_like(
        inputs["casing"], 5))
    assert not np.allclose(model(lower, training=False), model(upper, training=False))
    plain = build_pretrained_tagger(PretrainedTaggerConfig(preset="tiny", num_tags=3), tiny_backbone(0))
    assert "casing" not in plain.input
