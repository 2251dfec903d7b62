"""Write the documentation's generated reference pages from the code they describe:

    docs/reference/configuration.md   every config key of every task: type, default, allowed values and meaning,
                                      read from the config dataclasses the strict parser builds (fields, their
                                      types and defaults, the rule each field declares (kpipe.config.constraints),
                                      the docstrings' Args)
    docs/reference/cli.md             every command's usage and options, from the argparse parsers `kpipe` runs

    python scripts/gen_docs.py            # rewrite both pages
    python scripts/gen_docs.py --check    # exit 1 if a page differs from what the code says (the tests run this)

No TensorFlow is imported.
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import io
import re
import sys
import textwrap
import typing
from contextlib import redirect_stdout
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kpipe.config.constraints import rule_of  # noqa: E402
from kpipe.config.pipeline import EvaluationConfig, ExportConfig  # noqa: E402
from kpipe.config.strict import type_name  # noqa: E402
from kpipe.config.training import TrainingConfig  # noqa: E402
from kpipe.errors import ConfigError  # noqa: E402
from kpipe.tasks.named_pipelines import list_pipelines, load_pipeline  # noqa: E402
from kpipe.tasks.registry import TASKS  # noqa: E402

PAGES = {"configuration": ROOT / "docs" / "reference" / "configuration.md", "cli": ROOT / "docs" / "reference" / "cli.md"}


# === Configuration reference ===

def arg_docs(cls: type) -> dict[str, str]:
    """The `Args:` section of a class docstring (and its bases'): field -> description, one line each."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        doc = inspect.getdoc(klass) or ""
        if "Args:" not in doc:
            continue
        section = doc.split("Args:", 1)[1]
        section = re.split(r"\n(?:Returns|Raises|Example|Examples):", section)[0]
        current: list[str] = []
        for line in textwrap.dedent(section).splitlines():
            match = re.match(r"^(\w+(?:, \w+)*): ?(.*)$", line)
            if match and not line.startswith(" "):
                current = [name.strip() for name in match.group(1).split(",")]
                for name in current:
                    docs[name] = match.group(2)
            elif current and line.strip():
                for name in current:
                    docs[name] = f"{docs[name]} {line.strip()}".strip()
    return docs


def allowed_values(cls: type) -> dict[str, str]:
    """field -> the values it accepts, as its declared rule (`kpipe.config.constraints`) describes them."""
    return {field.name: rule.describe(cls) for field in dataclasses.fields(cls)
            if (rule := rule_of(field)) is not None}


def _default(field: dataclasses.Field) -> str:
    if field.default is not dataclasses.MISSING:
        value = field.default
    elif field.default_factory is not dataclasses.MISSING:
        value = field.default_factory()
    else:
        return "(required)"
    if dataclasses.is_dataclass(value):
        return "a table"
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, tuple):
        value = list(value)
    return f"`{value!r}`".replace("'", '"')


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def config_table(cls: type, prefix: str) -> list[str]:
    """One markdown table of a config dataclass: key, type, default, allowed values, meaning."""
    docs, allowed = arg_docs(cls), allowed_values(cls)
    hints = typing.get_type_hints(cls)
    rows = ["| key | type | default | allowed | meaning |", "|---|---|---|---|---|"]
    nested = []
    # `family` first, then the fields in order (a shared group's, declared in a base class, come before the family's)
    for field in sorted(dataclasses.fields(cls), key=lambda f: f.name != "family"):
        if field.metadata.get("derived"):
            continue  # filled in from the data: a config file must not set it
        tp = hints[field.name]
        options = [o for o in typing.get_args(tp) if dataclasses.is_dataclass(o)] or (
            [tp] if dataclasses.is_dataclass(tp) else [])
        rows.append(f"| `{prefix}{field.name}` | {_cell(type_name(tp))} | {_cell(_default(field))} | "
                    f"{_cell(allowed.get(field.name, ''))} | {_cell(docs.get(field.name, ''))} |")
        for option in options:
            nested.append((f"{prefix}{field.name}", option))
    lines = rows
    for key, option in nested:
        lines += ["", f"`[{key}]` as `{option.__name__}`:", ""] + config_table(option, f"{key}.")
    return lines


def configuration_page() -> str:
    out = ["# Configuration reference", "",
           "<!-- Generated by scripts/gen_docs.py from the config dataclasses; do not edit by hand. -->", "",
           "A pipeline is one TOML file: `name`, `task`, an optional `description`, and the tables below. Every key",
           "is checked when the file is read (an unknown key is an error with a suggestion; a value out of range",
           "names the key and the value received), before TensorFlow loads. `--set table.key=value` overrides a key",
           "from the command line through the same checks. Keys whose values come from the data (vocabulary size,",
           "number of classes) are not listed: a config file cannot set them.", ""]
    out += ["## Tasks and model families", "",
            "The task registry's table (`kpipe/tasks/registry.py`; each family declares itself in",
            "`kpipe/families/<family>/__init__.py`). *Answered by*: the command that uses the task's exports;",
            "*tuned on*: what `kpipe tune` scores trials by.", "",
            "| task | family | what it is | ONNX / LiteRT | streamed shards | ensemble member |",
            "|---|---|---|---|---|---|"]
    for name, spec in TASKS.items():
        for family in spec.families:
            out.append(f"| `{name}` | `{family.name}` | {_cell(family.summary)} | {'yes' if family.portable else ''} | "
                       f"{'yes' if family.shards else ''} | {'yes' if family.ensemble_member else ''} |")
    out += ["", "| task | answered by | validation metrics logged | tuned on |", "|---|---|---|---|"]
    for name, spec in TASKS.items():
        try:
            tuned = "`" + spec.tuning_metric(load_pipeline(_first_pipeline(name), [])) + "`"
            logged = ", ".join(f"`{m}`" for m in ("val_loss", *spec.monitors))
        except ConfigError:
            tuned, logged = "nothing to tune", ""
        out.append(f"| `{name}` | `{_cell(spec.command)}` | {logged} | {tuned} |")
    out.append("")
    for name, spec in TASKS.items():
        out += [f"## Task `{name}`", "", f"### `[data]` ({spec.data.__name__})", ""]
        out += config_table(spec.data, "data.")
        out += ["", f"### `[preprocessing]` ({spec.preprocessing.__name__})", ""]
        out += config_table(spec.preprocessing, "preprocessing.")
        for family, cls in spec.models.items():
            out += ["", f"### `[model]` family `{family}` ({cls.__name__})", ""]
            out += config_table(cls, "model.")
        out.append("")
    for title, cls, prefix in (("`[training]` (every task)", TrainingConfig, "training."),
                               ("`[evaluation]` (every task)", EvaluationConfig, "evaluation."),
                               ("`[export]` (every task)", ExportConfig, "export.")):
        out += [f"## {title}", ""] + config_table(cls, prefix) + [""]
    return "\n".join(out)


def _first_pipeline(task: str) -> str:
    """The first bundled pipeline of `task` (the table shows what its tuning metric is by default)."""
    return next(entry.name for entry in list_pipelines() if entry.task == task)


# === CLI reference ===

def cli_page() -> str:
    from kpipe.cli.parser import build_parser

    parser = build_parser()
    out = ["# Command-line reference", "",
           "<!-- Generated by scripts/gen_docs.py from kpipe's argparse parsers; do not edit by hand. -->", "",
           "Every command prints one line and exits with status 2 on a mistake (`--debug` shows the traceback).", "",
           "```text", _help(parser), "```", ""]
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))  # noqa: SLF001
    for name, sub in subparsers.choices.items():
        out += [f"## `kpipe {name}`", "", "```text", _help(sub), "```", ""]
    return "\n".join(out)


def _help(parser: argparse.ArgumentParser) -> str:
    buffer = io.StringIO()
    with redirect_stdout(buffer):
        parser.print_help()
    return buffer.getvalue().rstrip()


def pages() -> dict[str, str]:
    import os

    os.environ["COLUMNS"] = "110"  # argparse wraps help at the terminal's width: fixed, so the page is stable
    return {"configuration": configuration_page(), "cli": cli_page()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a generated page is out of date")
    args = parser.parse_args()
    stale = []
    for name, text in pages().items():
        path = PAGES[name]
        if args.check:
            if not path.exists() or path.read_text(encoding="utf-8") != text + "\n":
                stale.append(str(path.relative_to(ROOT)))
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text + "\n", encoding="utf-8")
            print(f"wrote {path.relative_to(ROOT)}")
    if stale:
        print(f"out of date: {', '.join(stale)}; run python scripts/gen_docs.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
