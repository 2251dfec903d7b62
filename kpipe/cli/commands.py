"""The `kpipe` command: each `cmd_*` takes the parsed arguments (`kpipe.cli.parser`), checks what it can
before TensorFlow loads, calls the library, and prints the result.

User mistakes (bad config, missing data, missing model) print one line on stderr and exit
with code 2; `--debug` shows the traceback instead.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import re
import sys
import tempfile
import time
from pathlib import Path

from kpipe.cache import keep_xla_programs
from kpipe.errors import KpipeError
from kpipe.redact import mask_passwords

# TensorFlow's C++ log lines ("E0000 00:00:17... cuda_platform.cc:52] failed call to cuInit", oneDNN
# notes): glog's format, one letter for the severity, then the month and day.
CPP_LOG_LINE = re.compile(r"^([IWEF])\d{4} \d\d:\d\d:\d\d")


CPP_SEVERITY = {"I": 0, "W": 1, "E": 2, "F": 3}  # TF_CPP_MIN_LOG_LEVEL hides the severities below it



def _quiet_tensorflow_logs(debug: bool) -> None:
    """Keep TensorFlow's C++ log lines off the console unless `--debug` or the user's own
    TF_CPP_MIN_LOG_LEVEL asks for them. Must run before TensorFlow is imported: it reads the level once."""
    if debug:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "0")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def import_tensorflow_quietly() -> None:
    """Import TensorFlow without its C++ start-up lines (CUDA probing on a CPU machine, oneDNN notes).

    TF 2.21 logs some of them through absl before TF_CPP_MIN_LOG_LEVEL is read (tensorflow#100442),
    so we catch file descriptor 2 while importing and drop the C++ lines that level hides, passing on
    every other line (Python warnings, the lines a lower level asks for: `--debug`, or the user's own).
    """
    level = os.environ.get("TF_CPP_MIN_LOG_LEVEL", "3")
    level = int(level) if level.isdigit() else 0

    def shown(line: str) -> bool:
        match = CPP_LOG_LINE.match(line)
        if match:
            return CPP_SEVERITY[match.group(1)] >= level
        return level == 0 or not line.startswith("WARNING: All log messages before absl")

    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 2)
        try:
            import keras  # noqa: F401
            import tensorflow  # noqa: F401
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            captured.seek(0)
            for line in captured.read().decode("utf-8", "replace").splitlines():
                if shown(line):
                    print(line, file=sys.stderr)
    import absl.logging
    absl.logging.set_verbosity(absl.logging.WARNING)
    logging.getLogger("tensorflow").setLevel(logging.WARNING)


def _data_overrides(data: str) -> list[str]:
    """`--data X` as overrides: tfds:NAME, embedded:NAME, shards (a glob, or a folder of table files), a folder
    of class sub-folders, or a CSV/Parquet file."""
    from kpipe.datasets.shards import is_shard_pattern

    quoted = json.dumps(data.partition(":")[2] if data.startswith(("tfds:", "embedded:")) else data)
    if data.startswith("tfds:"):
        return ["data.source=tfds", f"data.name={quoted}"]
    if data.startswith("embedded:"):
        return ["data.source=embedded", f"data.name={quoted}"]
    if is_shard_pattern(data):
        return ["data.source=shards", f"data.path={quoted}"]
    return ["data.source=folder" if Path(data).is_dir() else "data.source=file", f"data.path={quoted}"]


def cmd_info(args) -> int:
    from kpipe.cli import info

    import_tensorflow_quietly()
    collected = info.collect()
    print(json.dumps(collected, indent=2) if args.json else info.format_info(collected))
    return 0


def cmd_list(args) -> int:
    from kpipe.tasks.named_pipelines import list_pipelines

    rows = [("PIPELINE", "TASK", "FAMILY", "EXPORTS", "DATA", "DESCRIPTION")]
    rows += [(e.name, e.task, e.family, "SavedModel, ONNX, LiteRT" if e.portable else "SavedModel", e.dataset,
              e.description) for e in list_pipelines()]
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]) - 1)]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)) + "  " + row[-1])
    return 0


def cmd_show(args) -> int:
    from kpipe.tasks.named_pipelines import load_pipeline

    print(load_pipeline(args.pipeline, config_overrides(args)).to_toml(), end="")
    return 0


def config_overrides(args) -> list[str]:
    shortcuts = [f"training.{name}={json.dumps(getattr(args, name))}" for name in ("strategy", "precision")
                 if getattr(args, name, None)]
    return (_data_overrides(args.data) if args.data else []) + shortcuts + list(args.set)


def cmd_run(args) -> int:
    from kpipe.tasks.runner import run_pipeline
    from kpipe.tasks.named_pipelines import check_runnable, load_pipeline
    from kpipe.training.run_lock import RunLock

    config = load_pipeline(args.pipeline, config_overrides(args))  # a bad config fails here, before TensorFlow loads
    check_runnable(config)
    if config.training.strategy == "multi_worker":  # a missing or malformed TF_CONFIG, or a rule on replicas
        from kpipe.config.cluster import cluster_size, read_tf_config
        from kpipe.tasks.registry import check_replicas

        check_replicas(config, cluster_size(read_tf_config()))  # one replica per worker on CPUs
    else:  # a second run of a live config stops here, before TensorFlow loads (a multi-worker run's
        # workers cannot tell yet which of them is the chief, the one that locks)
        RunLock.of(config).check_free()
    import_tensorflow_quietly()
    from kpipe.training.run_identity import AlreadyPublishedError

    try:
        print(run_pipeline(config).summary)
    except AlreadyPublishedError as published:  # killed while it cleaned up: its export is complete
        print(f"The interrupted run of this config had already been exported to {published.version_dir} "
              f"(its report: {published.version_dir / 'metrics.json'}); its leftover state is removed")
    return 0


def cmd_tune(args) -> int:
    from kpipe.tuning.study import STORAGE_VARIABLE, TuneOptions, prepare, tune_pipeline

    options = TuneOptions(trials=args.trials, timeout=args.timeout, space=args.space,
                          storage=args.storage or os.environ.get(STORAGE_VARIABLE) or None,
                          sampler=args.sampler, pruner=args.pruner, prune_after=args.prune_after, seed=args.seed,
                          include_defaults=args.include_defaults, export_best=args.export_best,
                          heartbeat_seconds=args.heartbeat_seconds, grace_seconds=args.grace_seconds)
    overrides = config_overrides(args)
    prepare(args.pipeline, overrides, options)  # every mistake in the space or options, before TensorFlow loads
    import_tensorflow_quietly()
    result = tune_pipeline(args.pipeline, overrides, options)
    print(result.table.to_string(index=False, na_rep="-", max_colwidth=60))
    best = (f"Best: {result.metric} {result.best_value:.4g} with {' '.join(result.best_overrides)}"
            if result.best_overrides else "No trial finished")
    print(f"{best}\nTrials: {result.folder / 'trials.csv'}; best config: {result.folder / 'best.toml'} "
          f"(kpipe run {result.folder / 'best.toml'}); plots: {', '.join(result.plots) or 'none'}; "
          f"the trials' runs side by side: kpipe compare {result.folder}"
          + (f"\nExported the best trial to {result.exported}" if result.exported else ""))
    return 0


def cmd_export(args) -> int:
    from kpipe.exports.portable import plan_portable

    plan = plan_portable(args.model, args.format, args.quantize, args.export_dir)  # mistakes before TensorFlow
    import_tensorflow_quietly()
    from kpipe.exports.portable import write_portable

    from kpipe.exports.manifest import answering_command, read

    target = write_portable(plan)
    written = read(target)
    size = sum((target / name).stat().st_size for name in written["network_files"])
    print(f"Exported {plan.source} as {args.format} (quantization {args.quantize}, network {size / 1024:.0f} KiB) "
          f"to {target}\nIt runs without TensorFlow: {answering_command(written, target) or f'kpipe serve {target}'}")
    return 0


def cmd_serve(args) -> int:
    models, sock, options = open_serving(args)
    from kpipe.serving.app import serve

    serve(models, sock, options=options)
    return 0


def open_serving(args):
    """What `kpipe serve ARGS` serves: (the loaded ModelRepository, the bound socket, the ServeOptions)."""
    from kpipe import dependencies
    from kpipe.serving import listen, repository

    dependencies.require_serving()
    if args.max_batch_size < 1 or args.batch_timeout_ms < 0 or args.max_request_mb <= 0 or args.poll_seconds <= 0:
        raise KpipeError("--max-batch-size must be at least 1, --batch-timeout-ms at least 0, --max-request-mb and "
                         "--poll-seconds above 0")
    if args.max_bodies_mb and args.max_bodies_mb < args.max_request_mb:
        raise KpipeError(f"--max-bodies-mb {args.max_bodies_mb:g} is below --max-request-mb {args.max_request_mb:g}: "
                         "no request of the largest size could ever be read; raise it (or 0: 4 x --max-request-mb)")
    if (args.max_rows_per_request < 0 or args.limit_concurrency < 1 or not args.header_timeout_s > 0
            or not args.body_timeout_s > 0 or not args.max_text_kb > 0 or not args.max_batch_kb > 0
            or not args.write_timeout_s > 0):
        raise KpipeError("--max-rows-per-request must be at least 0 (0: 4 x --max-batch-size), --limit-concurrency "
                         "at least 1, --header-timeout-s, --body-timeout-s, --write-timeout-s, --max-text-kb and "
                         "--max-batch-kb above 0")
    # Every model name resolved and the port taken before TensorFlow loads: a mistake fails in a second.
    served = [repository.parse_model_argument(m, args.export_dir) for m in args.models]
    sock = listen.bind(args.host, args.port)
    from kpipe.portable.runtime import is_portable
    from kpipe.serving.app import MODEL_THREADS, ServeOptions

    if not all(is_portable(model.root) for model in served):  # ONNX/LiteRT exports alone never load TensorFlow
        import_tensorflow_quietly()
        import tensorflow as tf

        # More of TensorFlow's threads than cores: a long op (n-grams of a huge text) then holds one of them,
        # not the whole pool, and the operating system shares the cores with every other request's ops.
        try:
            tf.config.threading.set_inter_op_parallelism_threads(MODEL_THREADS)
        except RuntimeError:  # TensorFlow already ran in this process (a test, a notebook): its pool stays
            logging.getLogger(__name__).debug("TensorFlow is initialized: its inter-op thread pool stays as it is")

    started = time.perf_counter()
    models = repository.ModelRepository(served, warm_up_rows=1 if args.no_batching else args.max_batch_size)
    logging.getLogger(__name__).info("Loaded and warmed up in %.1f s", time.perf_counter() - started)
    options = ServeOptions(batching=not args.no_batching, max_batch_size=args.max_batch_size,
                           batch_timeout=args.batch_timeout_ms / 1000,
                           max_request_bytes=int(args.max_request_mb * 2**20), poll_seconds=args.poll_seconds,
                           max_bodies_bytes=int(args.max_bodies_mb * 2**20),
                           max_rows_per_request=args.max_rows_per_request, limit_concurrency=args.limit_concurrency,
                           header_timeout=args.header_timeout_s, body_timeout=args.body_timeout_s,
                           write_timeout=args.write_timeout_s,
                           max_text_bytes=int(args.max_text_kb * 1024), max_batch_bytes=int(args.max_batch_kb * 1024))
    return models, sock, options


def cmd_compare(args) -> int:
    from kpipe.cli import compare

    runs = compare.read_runs(args.runs, args.export_dir)  # fails fast, before matplotlib loads
    print(compare.format_table(*compare.comparison_rows(runs)))
    compare.plot_curves(runs, args.out)
    print(f"\nValidation curves: {args.out}")
    return 0


class _MaskPasswords(logging.Filter):
    """Shows a URL's password as *** in every log line (see kpipe.redact)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        masked = mask_passwords(message)
        if masked != message:
            record.msg, record.args = masked, None
        return True


def _disk_full(error: BaseException) -> str | None:
    """For a full disk, " writing FILE" (or ""): Python says so with ENOSPC; TensorFlow's writers raise
    ResourceExhaustedError (or another OpError) whose message ends in "No space left on device". Else None."""
    if isinstance(error, OSError) and error.errno == errno.ENOSPC:
        return f" writing {error.filename}" if error.filename else ""
    message = str(getattr(error, "message", "") or error)
    if type(error).__module__.startswith("tensorflow") and "No space left on device" in message:
        found = re.search(r"(/[^;\s]+); No space left on device", message)
        return f" writing {found.group(1)}" if found else ""
    return None


def main(argv: list[str] | None = None) -> int:
    from kpipe.cli.parser import build_parser, parse

    args = parse(build_parser(), sys.argv[1:] if argv is None else list(argv))
    _quiet_tensorflow_logs(args.debug)
    keep_xla_programs()
    logging.basicConfig(level=logging.WARNING if args.quiet else logging.INFO,
                        format="%(asctime)s %(levelname)s %(message)s", datefmt="%H:%M:%S")
    for handler in logging.getLogger().handlers:  # any library's log line that quotes a database URL
        if not any(isinstance(f, _MaskPasswords) for f in handler.filters):
            handler.addFilter(_MaskPasswords())
    try:
        code = args.func(args)
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's own flush at exit
        return code
    except KpipeError as error:
        if args.debug:
            raise
        print(f"kpipe: error: {mask_passwords(str(error))}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as error:
        from kpipe.dependencies import training_install_hint

        hint = training_install_hint(args.command, error.name)
        if hint is None or args.debug:
            raise
        print(f"kpipe: error: {hint}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `kpipe list | head -1`: the reader has gone; the rest of the output is not wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so that the exit's flush does not fail
        return 141  # what a shell reports for a process ended by SIGPIPE
    except Exception as error:
        where = _disk_full(error)
        if where is None or args.debug:
            raise
        print(f"kpipe: error: no space left on device{where}; free some space and rerun the same command (a run "
              "resumes after its last finished epoch; earlier exports are untouched)", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("kpipe: interrupted; rerun the same command to resume from the last finished epoch",
              file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
