"""The layout the README describes: layers that import only the layers below them, a short top level,
short functions, and every package shipped."""

import ast
import re
from pathlib import Path

import kpipe

PACKAGE = Path(kpipe.__file__).parent
ROOT = PACKAGE.parent

# Lowest first. A module may import modules of its own layer or of a lower one.
LAYERS = [
    ("kpipe.errors", "kpipe.tokens", "kpipe.dependencies", "kpipe.cache", "kpipe.redact"),
    ("kpipe.config.strict", "kpipe.config.training"),
    ("kpipe.datasets",),
    ("kpipe.preprocessing",),
    ("kpipe.models", "kpipe.pretrained"),
    ("kpipe.config",),  # the registries: they name the config classes of datasets, preprocessing and models
    ("kpipe.evaluation", "kpipe.forecasting"),
    ("kpipe.exports",),
    ("kpipe.training",),
    ("kpipe.vectors",),
    ("kpipe.tasks",),
    ("kpipe.tuning",),
    ("kpipe.serving",),
    ("kpipe.cli", "kpipe.__main__"),
]


def layer_of(module: str) -> int:
    """The layer of the longest prefix of `module` that LAYERS names."""
    best, layer = "", None
    for index, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > len(best):
                best, layer = prefix, index
    assert layer is not None, f"{module} is in no layer of tests/unit/test_layout.py"
    return layer


def modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        name = ".".join(("kpipe", *path.relative_to(PACKAGE).with_suffix("").parts)).removesuffix(".__init__")
        yield name, path


def kpipe_imports(path: Path) -> set[str]:
    """Every kpipe module `path` imports, at its top or inside functions."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("kpipe"):
            found |= ({node.module} if node.module != "kpipe" else {f"kpipe.{a.name}" for a in node.names})
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("kpipe.")}
    return found


def test_no_module_imports_a_module_of_a_higher_layer():
    upward = [f"{name} -> {target}" for name, path in modules() if name != "kpipe"  # kpipe/__init__: lazy re-exports
              for target in kpipe_imports(path) if target != "kpipe" and layer_of(target) > layer_of(name)]
    assert not upward, upward


def test_the_top_level_holds_at_most_8_modules_besides_the_subpackages():
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= 8, top


def test_no_function_is_over_100_lines():
    long = [f"{name}.{node.name}: {node.end_lineno - node.lineno + 1} lines" for name, path in modules()
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno + 1 > 100]
    assert not long, long


def test_pyproject_ships_every_package():
    listed = set(re.search(r"^packages = \[(.*?)\]", (ROOT / "pyproject.toml").read_text(encoding="utf-8"),
                           re.M | re.S).group(1).replace('"', "").replace("\n", " ").replace(",", " ").split())
    on_disk = {".".join(("kpipe", *p.parent.relative_to(PACKAGE).parts)).rstrip(".")
               for p in PACKAGE.rglob("__init__.py")} | {"kpipe._pipelines"}
    assert listed == on_disk, (sorted(on_disk - listed), sorted(listed - on_disk))
