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
    ("kpipe.errors", "kpipe.tokens", "kpipe.dependencies", "kpipe.cache", "kpipe.redact", "kpipe.atomic"),
    ("kpipe.portable",),  # the runtime of ONNX / LiteRT exports: numpy only, no TensorFlow
    ("kpipe.config",),  # strict parsing, the training and pipeline config shapes, TF_CONFIG: no task knowledge
    ("kpipe.datasets",),
    ("kpipe.preprocessing",),
    ("kpipe.pretrained", "kpipe.layers"),
    ("kpipe.families",),
    ("kpipe.tasks.registry", "kpipe.tasks.named_pipelines"),  # the task registry names the families' configs
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


def test_no_module_is_over_400_lines():
    long = [f"{name}: {len(path.read_text(encoding='utf-8').splitlines())} lines" for name, path in modules()
            if len(path.read_text(encoding="utf-8").splitlines()) > 400]
    assert not long, long


def test_each_public_name_of_the_top_level_is_defined_where_it_is_looked_up():
    """One import path per public name: `kpipe.X` is a lazy alias of the module that defines X, never of a
    module that merely re-exports it."""
    import importlib

    elsewhere = []
    for name, module in kpipe._EXPORTS.items():
        value = getattr(importlib.import_module(module), name)
        if getattr(value, "__module__", module) != module:
            elsewhere.append(f"{name}: looked up in {module}, defined in {value.__module__}")
    assert not elsewhere, elsewhere


def test_no_module_re_exports_a_name_it_does_not_use():
    """`# noqa: F401` on a kpipe import meant a second import path for a name; only imports for their side
    effects (tensorflow_text registering its ops, TensorFlow loaded early) may carry it."""
    flagged = [f"{name}: {line.strip()}" for name, path in modules()
               for line in path.read_text(encoding="utf-8").splitlines()
               if "noqa: F401" in line and line.lstrip().startswith("from kpipe")]
    assert not flagged, flagged
