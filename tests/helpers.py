"""Running kpipe as the tests need it: the `kpipe` command in a subprocess (offline, as a new user, without some
modules) or in-process, a kill after an epoch, waiting for a condition. The tests' other shared pieces have a
module each: `checkpoints.py` (tiny pretrained checkpoints), `made_up_data.py`, `clusters.py` (two-worker
tf.distribute clusters), `servers.py` (a real `kpipe serve`). None of them loads TensorFlow when imported (test
collection stays fast); the helpers that need it import it when called. No test touches the network.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
import time


# Any download a subprocess tries goes to a closed port and fails at once, even on a machine with internet.
OFFLINE = {"HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9", "HF_HUB_OFFLINE": "1"}


def kpipe(*args, cwd, timeout=600, env=None) -> subprocess.CompletedProcess:
    """Run `python -m kpipe ARGS` in `cwd` as a user would, in `env` (default: this process's environment)."""
    return subprocess.run([sys.executable, "-m", "kpipe", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env=env, stdin=subprocess.DEVNULL)


def kpipe_reporting_tensorflow(*args, cwd, env=None, timeout=120) -> subprocess.CompletedProcess:
    """`kpipe ARGS` in a fresh process whose stdout is then "True" or "False": whether TensorFlow had been
    imported when the command returned (mistakes caught before it loads leave it "False")."""
    script = ("import sys\nfrom kpipe.cli.commands import main\ncode = main(sys.argv[1:])\n"
              "print('tensorflow' in sys.modules)\nsys.exit(code)\n")
    return subprocess.run([sys.executable, "-c", script, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def kpipe_in_process(*args, cwd) -> tuple[int, str]:
    """`kpipe ARGS` run by `main` in this process, in `cwd`: its exit code and what it printed (its log lines
    go to the test's stderr). For fixtures that only need a run's result (each command keeps its own subprocess
    tests; a fresh process costs a TensorFlow start-up); a module fixture cannot use monkeypatch."""
    from kpipe.cli.commands import main

    printed = io.StringIO()
    with contextlib.chdir(cwd), contextlib.redirect_stdout(printed):
        code = main(list(args))
    return code, printed.getvalue()


def new_user_env(env=None) -> dict:
    """`env` (default: this process's) as a new user has it: without the tests' TF_CPP_MIN_LOG_LEVEL."""
    return {k: v for k, v in (env or os.environ).items() if k != "TF_CPP_MIN_LOG_LEVEL"}


# === An environment without tensorflow-text (as on Windows) ===

def without_tensorflow_text(tmp_path):
    """The environment of a Python process in which `import tensorflow_text` fails, as on Windows."""
    import os

    blocker = tmp_path / "blocker"
    blocker.mkdir(exist_ok=True)
    (blocker / "sitecustomize.py").write_text('import sys\nsys.modules["tensorflow_text"] = None\n')
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}  # as a new user has it
    return env | {"PYTHONPATH": os.pathsep.join(filter(None, [str(blocker), os.environ.get("PYTHONPATH")]))}


# === A kill after an epoch ===

def kill_after(epoch: int):
    """A Keras callback that stands in for a kill: it stops the process after `epoch` is saved."""
    import keras

    class Crash(keras.callbacks.Callback):
        def on_epoch_end(self, finished, logs=None):
            if finished == epoch:
                raise KeyboardInterrupt

    return Crash()


# === Python without some modules, and waiting ===


def without_modules(*modules: str) -> str:
    """Python code that makes importing any of `modules` (or their submodules) fail, as if not installed."""
    return ("import sys\n"
            "class Blocked:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            f"        if name.split('.')[0] in {modules!r}:\n"
            "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
            "sys.meta_path.insert(0, Blocked())\n")


def kpipe_without(blocked: tuple[str, ...], *commands: list[str], cwd=None, timeout=120) -> subprocess.CompletedProcess:
    """Each of `commands` (`kpipe` arguments) through `main`, one after the other, in a fresh process where the
    `blocked` modules cannot be imported; the process fails if a command does not return 0 or if any blocked module
    was imported (their outputs, in order, are its stdout)."""
    script = without_modules(*blocked) + "from kpipe.cli.commands import main\n" + "".join(
        f"assert main({list(command)!r}) == 0, {list(command)!r}\n" for command in commands) + (
        f"assert not [m for m in sys.modules if m.split('.')[0] in {blocked!r}]\n")
    return subprocess.run([sys.executable, "-c", script], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def wait_for(condition, timeout: float = 60, every: float = 0.5):
    """Poll `condition()` until it is truthy; its last value."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(every)
