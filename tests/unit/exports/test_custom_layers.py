"""Every kpipe module that registers a Keras-serializable class is in the one registry the loader imports
(every family's fresh-process load: tests/unit/families/test_every_family.py)."""

import re
from pathlib import Path


import kpipe
from kpipe.exports.custom_layers import CUSTOM_LAYER_MODULES

PACKAGE = Path(kpipe.__file__).parent


def registering_modules() -> set[str]:
    found = set()
    for path in PACKAGE.rglob("*.py"):
        if re.search(r"^@keras\.saving\.register_keras_serializable", path.read_text(encoding="utf-8"), re.M):
            found.add("kpipe." + ".".join(path.relative_to(PACKAGE).with_suffix("").parts))
    return found


def test_every_module_that_registers_keras_classes_is_in_the_registry():
    modules = registering_modules()
    assert "kpipe.families.char_transformer.model" in modules  # the module the loader once missed
    assert modules <= set(CUSTOM_LAYER_MODULES), sorted(modules - set(CUSTOM_LAYER_MODULES))


