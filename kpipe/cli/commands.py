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
SENTENCE_ENCODERS = ("classify", "embed")  # the tasks whose exports can have an `embed` signature


def _quiet_tensorflow_logs(debug: bool) -> None:
    """Keep TensorFlow's C++ log lines off the console unless `--debug` or the user's own
    TF_CPP_MIN_LOG_LEVEL asks for them. Must run before TensorFlow is imported: it reads the level once."""
    if debug:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "0")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def _import_tensorflow_quietly() -> None:
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
            import tensorflow  # noqa: F401
            import keras  # noqa: F401
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
    """`--data X` as overrides: tfds:NAME, embedded:NAME, a folder, or a CSV/Parquet file."""
    quoted = json.dumps(data.partition(":")[2] if data.startswith(("tfds:", "embedded:")) else data)
    if data.startswith("tfds:"):
        return ["data.source=tfds", f"data.name={quoted}"]
    if data.startswith("embedded:"):
        return ["data.source=embedded", f"data.name={quoted}"]
    return ["data.source=folder" if Path(data).is_dir() else "data.source=file", f"data.path={quoted}"]


# === Commands ===

def cmd_info(args) -> int:
    from kpipe.cli import info

    _import_tensorflow_quietly()
    collected = info.collect()
    print(json.dumps(collected, indent=2) if args.json else info.format_info(collected))
    return 0


def cmd_list(args) -> int:
    from kpipe.config.pipelines import list_pipelines

    entries = list_pipelines()
    width = max(len(e.name) for e in entries)
    task_width = max(len(e.task) for e in entries)
    data_width = max(len(e.dataset) for e in entries)
    for e in entries:
        print(f"{e.name:<{width}}  {e.task:<{task_width}}  {e.dataset:<{data_width}}  {e.description}")
    return 0


def cmd_show(args) -> int:
    from kpipe.config.pipelines import load_pipeline

    print(load_pipeline(args.pipeline, _overrides(args)).to_toml(), end="")
    return 0


def _overrides(args) -> list[str]:
    shortcuts = [f"training.{name}={json.dumps(getattr(args, name))}" for name in ("strategy", "precision")
                 if getattr(args, name, None)]
    return (_data_overrides(args.data) if args.data else []) + shortcuts + list(args.set)


def cmd_run(args) -> int:
    from kpipe.config.pipelines import check_runnable, load_pipeline
    from kpipe.tasks import run_pipeline
    from kpipe.training.run_lock import RunLock

    config = load_pipeline(args.pipeline, _overrides(args))  # a bad config fails here, before TensorFlow loads
    check_runnable(config)
    if config.training.strategy == "multi_worker":  # a missing or malformed TF_CONFIG, or a rule on replicas
        from kpipe.config.cluster import cluster_size, read_tf_config
        from kpipe.config.tasks import check_replicas

        check_replicas(config, cluster_size(read_tf_config()))  # one replica per worker on CPUs
    else:  # a second run of a live config stops here, before TensorFlow loads (a multi-worker run's
        # workers cannot tell yet which of them is the chief, the one that locks)
        RunLock.of(config).check_free()
    _import_tensorflow_quietly()
    from kpipe.training.run_identity import AlreadyPublishedError

    try:
        print(run_pipeline(config).summary)
    except AlreadyPublishedError as published:  # killed while it cleaned up: its export is complete
        print(f"The interrupted run of this config had already been exported to {published.version_dir} "
              f"(its report: {published.version_dir / 'metrics.json'}); its leftover state is removed")
    return 0


def cmd_tune(args) -> int:
    from kpipe.tuning.study import TuneOptions, prepare, tune_pipeline

    from kpipe.tuning.study import STORAGE_VARIABLE

    options = TuneOptions(trials=args.trials, timeout=args.timeout, space=args.space,
                          storage=args.storage or os.environ.get(STORAGE_VARIABLE) or None,
                          sampler=args.sampler, pruner=args.pruner, prune_after=args.prune_after, seed=args.seed,
                          include_defaults=args.include_defaults, export_best=args.export_best,
                          heartbeat_seconds=args.heartbeat_seconds, grace_seconds=args.grace_seconds)
    overrides = _overrides(args)
    prepare(args.pipeline, overrides, options)  # every mistake in the space or options, before TensorFlow loads
    _import_tensorflow_quietly()
    result = tune_pipeline(args.pipeline, overrides, options)
    print(result.table.to_string(index=False, na_rep="-", max_colwidth=60))
    best = (f"Best: {result.metric} {result.best_value:.4g} with {' '.join(result.best_overrides)}"
            if result.best_overrides else "No trial finished")
    print(f"{best}\nTrials: {result.folder / 'trials.csv'}; best config: {result.folder / 'best.toml'} "
          f"(kpipe run {result.folder / 'best.toml'}); plots: {', '.join(result.plots) or 'none'}; "
          f"the trials' runs side by side: kpipe compare {result.folder}"
          + (f"\nExported the best trial to {result.exported}" if result.exported else ""))
    return 0


def _read_lines(stream_bytes: bytes, source: str) -> list[str]:
    try:
        text = stream_bytes.decode("utf-8")
    except UnicodeDecodeError as error:
        line = stream_bytes[:error.start].count(b"\n") + 1
        raise KpipeError(f"{source} is not valid UTF-8 (line {line}, byte 0x{stream_bytes[error.start]:02x}); "
                         "re-save it as UTF-8") from None
    return [line for line in text.splitlines() if line.strip()]


def _existing_file(option: str, path: str) -> Path:
    """The file an option names; one clear error if it is missing."""
    if not Path(path).is_file():
        raise KpipeError(f"{option} not found: {path}")
    return Path(path)


def _file_lines(option: str, path: str) -> list[str]:
    """The non-blank lines of the file an option names (UTF-8); one clear error if it is missing."""
    return _read_lines(_existing_file(option, path).read_bytes(), path)


def _input_texts(args, verb: str) -> list[str]:
    """Texts from the arguments, then --file, else standard input (one per line)."""
    texts = list(getattr(args, "texts", []))  # `similar` takes its sentences from --file or stdin only
    if args.file:
        texts += _file_lines("--file", args.file)
    if not texts and not sys.stdin.isatty():
        texts = _read_lines(sys.stdin.buffer.read(), "standard input")
    if not texts:
        raise KpipeError(f"nothing to {verb}: pass texts as arguments, --file FILE, or lines on standard input")
    return texts


def _texts_and_output(args, verb: str):
    """(TextTable of the texts to answer, --output path or None), checked before any model loads.

    A --file named like a table (.csv, .tsv, .parquet, .jsonl) is read by --column; any other file,
    the arguments or standard input give one text per line.
    """
    from kpipe.cli import batch_predict
    from kpipe.datasets.files import is_table

    output = batch_predict.check_output(args.output, args.file) if args.output else None
    pairs, pair_column = getattr(args, "pair", None), getattr(args, "pair_column", None)
    if pairs:
        if getattr(args, "texts", None) or args.file:
            raise KpipeError("give pairs with --pair FIRST SECOND or texts (arguments, --file), not both")
        return batch_predict.pair_table([tuple(pair) for pair in pairs]), output
    if args.file and is_table(Path(args.file)):
        _existing_file("--file", args.file)
        if getattr(args, "texts", None):
            raise KpipeError(f"give texts as arguments or in --file {args.file}, not both")
        return batch_predict.read_texts(args.file, args.column, pair_column=pair_column), output
    if pair_column:
        raise KpipeError(f"--pair-column needs a table file (.csv, .tsv, .parquet, .jsonl) with both texts; "
                         f"{args.file or 'the input'} is read as one text per line")
    if args.column:
        raise KpipeError(f"--column needs a table file (.csv, .tsv, .parquet, .jsonl); {args.file or 'the input'} "
                         "is read as one text per line")
    return batch_predict.read_texts(None, None, lines=_input_texts(args, verb)), output


def _write_answers(args, task: str, model_dir: Path, table, output: Path) -> int:
    from kpipe.cli import batch_predict

    rows = batch_predict.predict_file(task, model_dir, table, output, progress=sys.stderr.isatty() and not args.quiet)
    print(f"Wrote {rows} row{'s' if rows != 1 else ''} to {output}")
    return 0


def _export_of(args, task: str | tuple[str, ...], command: str, signature: str = "") -> Path:
    """The export folder the command was given, checked against its manifest before TensorFlow loads."""
    from kpipe.exports.open import open_export

    model_dir = open_export(args.model, task=task, command=command, export_dir=args.export_dir, signature=signature,
                            load="nothing").path
    _import_tensorflow_quietly()
    return model_dir


def cmd_translate(args) -> int:
    table, output = _texts_and_output(args, "translate")
    model_dir = _export_of(args, "translate", "kpipe translate")  # fails fast, before TensorFlow loads
    if output:
        return _write_answers(args, "translate", model_dir, table, output)
    texts = table.texts
    from kpipe.tasks.translate import translate_texts

    for text, output in zip(texts, translate_texts(model_dir, texts)):
        print(json.dumps({"input": text, "output": output}, ensure_ascii=False) if args.json else f"{text}\t{output}")
    return 0


def cmd_embed(args) -> int:
    table, output = _texts_and_output(args, "embed")
    # fails fast, before TensorFlow loads
    model_dir = _export_of(args, SENTENCE_ENCODERS, "kpipe embed", signature="embed")
    if output:
        return _write_answers(args, "embed", model_dir, table, output)
    texts = table.texts
    from kpipe.vectors.sentence_embeddings import embed_texts

    for text, vector in zip(texts, embed_texts(model_dir, texts)):
        values = [round(float(v), 6) + 0.0 for v in vector]  # + 0.0: no "-0"
        print(json.dumps({"text": text, "embedding": values}, ensure_ascii=False) if args.json
              else text + "\t" + " ".join(f"{v:.6g}" for v in values))
    return 0


def cmd_similar(args) -> int:
    # fails fast, before TensorFlow loads
    model_dir = _export_of(args, SENTENCE_ENCODERS, "kpipe similar", signature="embed")
    sentences = _input_texts(args, "rank")
    from kpipe.vectors.sentence_embeddings import most_similar

    for score, sentence in most_similar(model_dir, args.query, sentences, k=args.k):
        print(f"{score:.4f}\t{sentence}")
    return 0


def cmd_predict(args) -> int:
    table, output = _texts_and_output(args, "predict")
    model_dir = _export_of(args, "classify", "kpipe predict")  # fails fast, before TensorFlow loads
    _check_pairs_match(args.model, model_dir, table)
    if output:
        return _write_answers(args, "classify", model_dir, table, output)
    texts = table.texts

    from kpipe.tasks.classify import predict_texts

    for p in predict_texts(model_dir, texts, pairs=table.pairs):
        if args.json:
            print(json.dumps({"text": p.text, **({"text_pair": p.text_pair} if p.text_pair is not None else {}),
                              "label": p.label, "probability": round(p.probability, 6),
                              "probabilities": {k: round(v, 6) for k, v in p.probabilities.items()},
                              **({"labels": list(p.labels)} if p.labels is not None else {})},
                             ensure_ascii=False))
        else:
            print(f"{p.label}\t{p.probability:.4f}\t{p.text}" + (f"\t{p.text_pair}" if p.text_pair is not None else ""))
    return 0


def _check_pairs_match(name: str, model_dir: Path, table) -> None:
    """A pair model given single texts, or a single-text model given pairs: one line saying what to give."""
    from kpipe.exports import manifest

    takes_pairs = "text_pair" in manifest.read(model_dir).get("signatures", {}).get("serve", {}).get("inputs", {})
    if takes_pairs and table.pairs is None:
        raise KpipeError(f"{name} classifies pairs of texts: give --pair FIRST SECOND (repeatable), or a table "
                         "--file with --column and --pair-column")
    if table.pairs is not None and not takes_pairs:
        raise KpipeError(f"{name} classifies single texts, not pairs: give the texts without --pair/--pair-column")


def cmd_forecast(args) -> int:
    model_dir = _export_of(args, "forecast", "kpipe forecast")  # fails fast, before TensorFlow loads
    from kpipe.tasks.forecast import forecast_file

    result = forecast_file(model_dir, args.input)
    if args.json:
        def rounded(values):
            return [round(float(v), 6) for v in values]

        print(json.dumps({"target": result.target, "forecast": rounded(result.values),
                          "times": [t.isoformat() for t in result.times] if result.times is not None else None,
                          "intervals": {str(level): {"lower": rounded(lower), "upper": rounded(upper)}
                                        for level, (lower, upper) in result.intervals.items()}}))
        return 0
    bounds = "".join(f"\tlower_{level}\tupper_{level}" for level in result.intervals)
    print(f"step\t{'time' + chr(9) if result.times is not None else ''}{result.target}{bounds}")
    for step, value in enumerate(result.values, start=1):
        when = f"{result.times[step - 1]}\t" if result.times is not None else ""
        limits = "".join(f"\t{lower[step - 1]:.6g}\t{upper[step - 1]:.6g}" for lower, upper in result.intervals.values())
        print(f"{step}\t{when}{value:.6g}{limits}")
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
    if (args.max_rows_per_request < 0 or args.limit_concurrency < 1 or not args.header_timeout_s > 0
            or not args.body_timeout_s > 0 or not args.max_text_kb > 0 or not args.max_batch_kb > 0):
        raise KpipeError("--max-rows-per-request must be at least 0 (0: 4 x --max-batch-size), --limit-concurrency "
                         "at least 1, --header-timeout-s, --body-timeout-s, --max-text-kb and --max-batch-kb above 0")
    # Every model name resolved and the port taken before TensorFlow loads: a mistake fails in a second.
    served = [repository.parse_model_argument(m, args.export_dir) for m in args.models]
    sock = listen.bind(args.host, args.port)
    _import_tensorflow_quietly()
    import tensorflow as tf

    from kpipe.serving.app import MODEL_THREADS, ServeOptions

    # More of TensorFlow's threads than cores: a long op (n-grams of a huge text) then holds one of them, not
    # the whole pool, and the operating system shares the cores with every other request's ops.
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
                           max_rows_per_request=args.max_rows_per_request, limit_concurrency=args.limit_concurrency,
                           header_timeout=args.header_timeout_s, body_timeout=args.body_timeout_s,
                           max_text_bytes=int(args.max_text_kb * 1024), max_batch_bytes=int(args.max_batch_kb * 1024))
    return models, sock, options


def cmd_generate(args) -> int:
    model_dir = _export_of(args, "generate", "kpipe generate")  # fails fast, before TensorFlow loads
    from kpipe.tasks.generate import generate_names

    names = generate_names(model_dir, prefix=args.prefix, count=args.count, temperature=args.temperature,
                           category=args.category, top_k=args.top_k, seed=args.seed)
    print(json.dumps(names, ensure_ascii=False) if args.json else "\n".join(names))
    return 0


def _word_vectors(args):
    from kpipe.vectors import word_vectors

    if args.model:
        _import_tensorflow_quietly()  # the export's Keras model holds the vectors
        return word_vectors.classifier_word_vectors(args.model)
    return word_vectors.load_word_vectors(args.vectors)  # a text file (or glove:6B.50d): no TensorFlow needed


def cmd_neighbors(args) -> int:
    for word, score in _word_vectors(args).neighbors(args.word, args.k):
        print(f"{score:.4f}\t{word}")
    return 0


def cmd_analogy(args) -> int:
    for word, score in _word_vectors(args).analogy(args.a, args.b, args.c, args.k):
        print(f"{score:.4f}\t{word}")
    return 0


def cmd_similarity(args) -> int:
    print(f"{_word_vectors(args).similarity(args.first, args.second):.4f}")
    return 0


def _map_points(args):
    """(labels, vectors, groups or None) for `kpipe map`: sentences through an embed export, or words."""
    from kpipe.vectors import maps

    if args.texts or args.texts_file:
        if args.words or args.top or args.file:
            raise KpipeError("map either sentences (--texts/--texts-file) or words (--words/--top/--file), not both")
        texts = list(args.texts or [])
        if args.texts_file:
            texts += _file_lines("--texts-file", args.texts_file)
        args.model = args.source
        model_dir = _export_of(args, SENTENCE_ENCODERS, "kpipe map --texts", signature="embed")
        from kpipe.vectors.sentence_embeddings import embed_texts

        return texts, embed_texts(model_dir, texts), None
    if sum(bool(x) for x in (args.words, args.top, args.file)) != 1:
        raise KpipeError("say which words to map: --words w1 w2 ..., --top N or --file words.txt (one of them)")
    given_groups = {}
    if args.file:
        lines = [line.strip() for line in _file_lines("--file", args.file)]
        if any(("\t" in line or "," in line) for line in lines):
            given_groups = maps.parse_groups(lines, args.file)  # word<TAB>group lines colour the map
            words = list(given_groups)
        else:
            words = lines
    _import_tensorflow_quietly()
    from kpipe.vectors.word_vectors import word_vectors_of

    vectors = word_vectors_of(args.source, args.export_dir)
    if args.top:
        words = vectors.words[:args.top]
    elif args.words:
        words = args.words
    labels, matrix, unknown = maps.word_points(vectors, words, args.source)
    if unknown:
        print(f"kpipe: warning: not in the vocabulary of {args.source}, left out: {', '.join(unknown)}", file=sys.stderr)
    return labels, matrix, [given_groups.get(w, "") for w in labels] if given_groups else None


def cmd_map(args) -> int:
    from kpipe.vectors import maps

    table = maps.parse_groups(_file_lines("--groups", args.groups), args.groups) if args.groups else None
    labels, vectors, groups = _map_points(args)  # read after the label file: a missing one fails fast
    if table is not None:
        groups = [table.get(label, "") for label in labels]
    points = maps.make_map(labels, vectors, method=args.method, groups=groups, clusters=args.clusters, seed=args.seed)
    maps.plot_map(points, args.out, title=args.title or f"{args.source}: {len(labels)} points, {args.method}")
    written = [args.out]
    if args.csv:
        written.append(str(points.write_csv(args.csv)))
    print(f"Wrote {' and '.join(written)} ({len(labels)} points, {args.method})")
    return 0


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


# === Argument parsing ===

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
