"""Optional packages: whether they are installed (without importing them) and what to say when not.

tensorflow-text has no Windows wheels, so kpipe installs it only where it exists (a platform marker
in pyproject.toml); only the WordPiece tokenizer needs it.
"""

from __future__ import annotations

import importlib.util

from kpipe.errors import MissingDependencyError

TENSORFLOW_TEXT_HINT = ("install it with: pip install tensorflow-text (it has no Windows wheels: on Windows use "
                        "WSL2, or set preprocessing.tokenizer = \"words\")")


def installed(module: str) -> bool:
    """Whether `module` can be imported, found without importing it."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # ValueError: a module blocked with sys.modules[name] = None
        return False


def require_tensorflow_text(what: str) -> None:
    """Raise MissingDependencyError naming `what` needs tensorflow-text, unless it is installed."""
    if not installed("tensorflow_text"):
        raise MissingDependencyError(f"{what} needs the WordPiece ops of tensorflow-text, which is not installed; "
                                     f"{TENSORFLOW_TEXT_HINT}")


def require_serving() -> None:
    """Raise MissingDependencyError unless the `serve` extra (Starlette, uvicorn) is installed."""
    missing = [name for name in ("starlette", "uvicorn") if not installed(name)]
    if missing:
        raise MissingDependencyError(f"kpipe serve needs {' and '.join(missing)}: pip install 'kpipe[serve]'")


# The packages of the `train` extra, by import name: what a runtime-only install (`kpipe[runtime]`) lacks
TRAINING_MODULES = frozenset({
    "tensorflow", "keras", "keras_hub", "tensorflow_text", "tensorflow_datasets", "matplotlib", "tensorboard",
    "statsmodels", "statsforecast", "sklearn", "filelock", "adjustText", "safetensors", "optuna", "tomli_w",
    "sacrebleu", "seqeval", "sklearn_crfsuite"})  # (tokenizers: the runtime install has it too)


def training_install_hint(command: str, module: str | None) -> str | None:
    """What to say when `kpipe COMMAND` misses `module` (a failed import): one line if it is a training package,
    else None."""
    top = (module or "").split(".")[0]
    if top not in TRAINING_MODULES:
        return None
    return (f"kpipe {command} needs {top}, which comes with kpipe's training install (this install answers with "
            "ONNX and LiteRT exports only): pip install 'kpipe[train]'")

