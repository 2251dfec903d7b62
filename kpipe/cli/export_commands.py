"""The commands that answer with an export: predict, translate, embed, similar, tag, forecast, generate (answer:
`answer_command`). Each reads
its inputs (arguments, a file or stdin), checks what it can before TensorFlow loads, and calls the task's
`predict` module.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from kpipe.cli.commands import import_tensorflow_quietly
from kpipe.errors import KpipeError
from kpipe.portable.export_files import MANIFEST_FILE
from kpipe.portable.runtime import is_portable

SENTENCE_ENCODERS = ("classify", "embed")  # the tasks whose exports can have an `embed` signature

def _read_lines(stream_bytes: bytes, source: str) -> list[str]:
    try:
        text = stream_bytes.decode("utf-8")
    except UnicodeDecodeError as error:
        line = stream_bytes[:error.start].count(b"\n") + 1
        raise KpipeError(f"{source} is not valid UTF-8 (line {line}, byte 0x{stream_bytes[error.start]:02x}); "
                         "re-save it as UTF-8") from None
    # One text per "\n" line, blank lines kept: the answers line up with the input's lines (str.splitlines would
    # also split on form feeds, U+2028 and others inside a text).
    text = text.removeprefix("\ufeff").removesuffix("\n")
    return [line.removesuffix("\r") for line in text.split("\n")] if text else []


def existing_file(option: str, path: str) -> Path:
    """The file an option names; one clear error if it is missing."""
    if not Path(path).is_file():
        raise KpipeError(f"{option} not found: {path}")
    return Path(path)


def file_lines(option: str, path: str, keep_blank: bool = False) -> list[str]:
    """The lines of the file an option names (UTF-8; the non-blank ones unless `keep_blank`); one clear error if
    it is missing."""
    lines = _read_lines(existing_file(option, path).read_bytes(), path)
    return lines if keep_blank else [line for line in lines if line.strip()]


def _input_texts(args, verb: str) -> list[str]:
    """Texts from the arguments, then --file, else standard input (one per line)."""
    texts = list(getattr(args, "texts", []))  # `similar` takes its sentences from --file or stdin only
    if args.file:
        texts += file_lines("--file", args.file, keep_blank=True)  # an answer per line: they line up
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

    output = (batch_predict.check_output(args.output, args.file, overwrite=getattr(args, "overwrite", False))
              if args.output else None)
    pairs, pair_column = getattr(args, "pair", None), getattr(args, "pair_column", None)
    if pairs:
        if getattr(args, "texts", None) or args.file:
            raise KpipeError("give pairs with --pair FIRST SECOND or texts (arguments, --file), not both")
        return batch_predict.pair_table([tuple(pair) for pair in pairs]), output
    if args.file and is_table(Path(args.file)):
        existing_file("--file", args.file)
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


def write_answers(args, task: str, model_dir: Path, table, output: Path) -> int:
    from kpipe.cli import batch_predict

    rows = batch_predict.predict_file(task, model_dir, table, output, progress=sys.stderr.isatty() and not args.quiet)
    print(f"Wrote {rows} row{'s' if rows != 1 else ''} to {output}")
    return 0


def export_of(args, task: str | tuple[str, ...], command: str, signature: str = "") -> Path:
    """The export folder the command was given, checked against its manifest before TensorFlow loads; for a portable
    export (ONNX, LiteRT) of a task that has them, its manifest alone, and TensorFlow never loads."""
    from kpipe.portable.runtime import portable_kinds

    kinds = portable_kinds() if is_portable(args.model) else {}
    if task in kinds:
        kinds[task].manifest_of(Path(args.model))  # an export of another task: one line
        return Path(args.model)
    from kpipe.exports.open import open_export

    model_dir = open_export(args.model, task=task, command=command, export_dir=args.export_dir, signature=signature,
                            load="nothing").path
    import_tensorflow_quietly()
    return model_dir


def cmd_translate(args) -> int:
    table, output = _texts_and_output(args, "translate")
    model_dir = export_of(args, "translate", "kpipe translate")  # fails fast, before TensorFlow loads
    if output:
        return write_answers(args, "translate", model_dir, table, output)
    texts = table.texts
    from kpipe.tasks.translate.predict import translate_texts

    for text, output in zip(texts, translate_texts(model_dir, texts)):
        print(json.dumps({"input": text, "output": output}, ensure_ascii=False) if args.json else f"{text}\t{output}")
    return 0


def cmd_tag(args) -> int:
    if args.conll:
        return _tag_conll(args)
    table, output = _texts_and_output(args, "tag")
    model_dir = export_of(args, "tag", "kpipe tag", signature="tag_tokens")  # fails fast, before TensorFlow loads
    if output:
        return write_answers(args, "tag", model_dir, table, output)
    from kpipe.tasks.tag.predict import marked, tag_texts

    for answer in tag_texts(model_dir, table.texts):
        print(json.dumps(answer, ensure_ascii=False) if args.format == "jsonl" else marked(answer))
    return 0


def _tag_conll(args) -> int:
    """A CoNLL --file tagged line by line (`kpipe.tasks.tag.conll_out`), printed or written to --output."""
    from kpipe.atomic import write_text_atomically
    from kpipe.cli import batch_predict
    from kpipe.datasets.files import read_text
    from kpipe.tasks.tag.conll_out import conll_sentences, tag_conll

    if not args.file or args.texts or args.column:
        raise KpipeError("--conll tags a CoNLL --file (a word per line, a blank line between sentences, the words in "
                         "--token-column); give the file, no texts and no --column")
    output = (batch_predict.check_output(args.output, args.file, overwrite=args.overwrite, any_format=True)
              if args.output else None)
    lines, sentences = conll_sentences(read_text(existing_file("--file", args.file)), args.file, args.token_column)
    model_dir = export_of(args, "tag", "kpipe tag", signature="tag_tokens")  # fails fast, before TensorFlow loads
    tagged = "\n".join(tag_conll(model_dir, lines, sentences, args.token_column))
    if output is None:
        print(tagged, end="" if tagged.endswith("\n") else "\n")
        return 0
    write_text_atomically(output, tagged)
    print(f"Wrote {len(sentences)} sentence{'s' if len(sentences) != 1 else ''} to {output}")
    return 0


def cmd_embed(args) -> int:
    table, output = _texts_and_output(args, "embed")
    # fails fast, before TensorFlow loads
    model_dir = export_of(args, SENTENCE_ENCODERS, "kpipe embed", signature="embed")
    if output:
        return write_answers(args, "embed", model_dir, table, output)
    texts = table.texts
    from kpipe.vectors.sentence_embeddings import embed_texts

    for text, vector in zip(texts, embed_texts(model_dir, texts)):
        values = [round(float(v), 6) + 0.0 for v in vector]  # + 0.0: no "-0"
        print(json.dumps({"text": text, "embedding": values}, ensure_ascii=False) if args.json
              else text + "\t" + " ".join(f"{v:.6g}" for v in values))
    return 0


def cmd_similar(args) -> int:
    # fails fast, before TensorFlow loads
    model_dir = export_of(args, SENTENCE_ENCODERS, "kpipe similar", signature="embed")
    sentences = _input_texts(args, "rank")
    from kpipe.vectors.sentence_embeddings import most_similar

    for score, sentence in most_similar(model_dir, args.query, sentences, k=args.k):
        print(f"{score:.4f}\t{sentence}")
    return 0


def cmd_predict(args) -> int:
    from kpipe.datasets.shards import is_shard_pattern

    if args.file and is_shard_pattern(args.file):  # a glob or a folder of tables: one output shard per input shard
        return _predict_shards(args)
    table, output = _texts_and_output(args, "predict")
    if is_portable(args.model):  # an ONNX or LiteRT export: answered without TensorFlow
        return _predict_portable(args, Path(args.model), table, output)
    model_dir = export_of(args, "classify", "kpipe predict")  # fails fast, before TensorFlow loads
    _check_pairs_match(args.model, model_dir, table)
    if output:
        return write_answers(args, "classify", model_dir, table, output)
    texts = table.texts

    from kpipe.tasks.classify.predict import predict_texts

    _print_predictions(args, predict_texts(model_dir, texts, pairs=table.pairs))
    return 0


def _predict_shards(args) -> int:
    from kpipe.cli import shard_predict
    from kpipe.cli.batch_predict import _classify_frame

    if getattr(args, "texts", None) or getattr(args, "pair", None) or getattr(args, "pair_column", None):
        raise KpipeError(f"--file {args.file} names shards of single texts: give no texts, --pair or --pair-column "
                         "with it")
    paths, folder = shard_predict.check_shard_job(args.file, args.column or "text", args.output)
    if is_portable(args.model):
        from kpipe.portable.runtime import PortableClassifier

        classifier = PortableClassifier.open(Path(args.model))

        def predict(texts):
            return _classify_frame(classifier.predict_all(texts))
    else:
        model_dir = export_of(args, "classify", "kpipe predict")  # fails fast, before TensorFlow loads
        from kpipe.tasks.classify.predict import load_predictor

        predictor = load_predictor(model_dir)

        def predict(texts):
            return _classify_frame(predictor(texts))
    shard_predict.check_same_model(folder, model_identity(args.model if is_portable(args.model) else model_dir),
                                   getattr(args, "overwrite", False))
    written, skipped, rows = shard_predict.predict_shards(paths, folder, args.column or "text", predict,
                                                          progress=sys.stderr.isatty() and not args.quiet)
    print(f"Wrote {written} shard{'s' if written != 1 else ''} ({rows} rows) to {folder}"
          + (f"; skipped {skipped} finished by an earlier run" if skipped else ""))
    return 0


def model_identity(model_dir) -> str:
    """Which export answered: its resolved folder and its manifest's stamp (a republished version differs)."""
    folder = Path(model_dir).resolve()
    stamp = (folder / MANIFEST_FILE).stat().st_mtime_ns if (folder / MANIFEST_FILE).exists() else 0
    return f"{folder} ({stamp})"


def _predict_portable(args, folder: Path, table, output: Path | None) -> int:
    from kpipe.portable.runtime import PortableClassifier

    if table.pairs is not None:
        raise KpipeError(f"{folder} classifies single texts; it takes no second texts (--pair, --pair-column)")
    if output:
        return write_answers(args, "classify", folder, table, output)
    classifier = PortableClassifier.open(folder)
    _print_predictions(args, classifier.predict_all(table.texts))
    return 0


def _print_predictions(args, predictions) -> None:
    for p in predictions:
        if args.json:
            print(json.dumps({"text": p.text, **({"text_pair": p.text_pair} if p.text_pair is not None else {}),
                              "label": p.label, "probability": round(p.probability, 6),
                              "probabilities": {k: round(v, 6) for k, v in p.probabilities.items()},
                              **({"labels": list(p.labels)} if p.labels is not None else {})},
                             ensure_ascii=False))
        else:
            print(f"{p.label}\t{p.probability:.4f}\t{p.text}" + (f"\t{p.text_pair}" if p.text_pair is not None else ""))


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
    model_dir = export_of(args, "forecast", "kpipe forecast")
    from kpipe.tasks.forecast.predict import forecast_file

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


def cmd_generate(args) -> int:
    if is_portable(args.model):  # a name generator's or a language model's
        model_dir = Path(args.model)
        task = json.loads((model_dir / MANIFEST_FILE).read_text(encoding="utf-8")).get("task")
    else:
        from kpipe.exports.open import open_export

        opened = open_export(args.model, task=("lm", "generate"), command="kpipe generate",
                             export_dir=args.export_dir, load="nothing")
        model_dir, task = opened.path, opened.manifest["task"]
    if task == "lm":
        return _write_text(args, model_dir)
    if args.prompt or args.max_new_tokens or args.top_p != 1.0 or args.beam_search:
        raise KpipeError("--prompt, --max-new-tokens, --top-p and --beam-search are for language models (task lm); "
                         "a name generator takes --prefix, --count, --category, --temperature, --top-k and --seed")
    if not is_portable(args.model):
        import_tensorflow_quietly()
    from kpipe.tasks.generate.predict import generate_names

    names = generate_names(model_dir, prefix=args.prefix, count=args.count,
                           temperature=1.0 if args.temperature is None else args.temperature,
                           category=args.category, top_k=args.top_k, seed=args.seed)
    print(json.dumps(names, ensure_ascii=False) if args.json else "\n".join(names))
    return 0


def _write_text(args, model_dir: Path) -> int:
    """`kpipe generate` with a language model: each --prompt's continuation."""
    from kpipe.tasks.lm.predict import SamplerSettings, write

    if not args.prompt:
        raise KpipeError('a language model continues a prompt: pass --prompt "some text"')
    if args.prefix or args.category or args.count != 10:
        raise KpipeError("--prefix, --count and --category are for name generators (task generate); a language model "
                         "takes --prompt, --max-new-tokens, --temperature, --top-k, --top-p, --seed, --beam-search")
    settings = SamplerSettings.from_options(args.max_new_tokens, args.temperature, args.top_k, args.top_p, args.seed,
                                            beam_search=args.beam_search)
    if not is_portable(model_dir):  # an ONNX or LiteRT export writes without TensorFlow
        import_tensorflow_quietly()
    for prompt, text in zip(args.prompt, write(model_dir, args.prompt, settings)):
        print(json.dumps({"prompt": prompt, "text": text}, ensure_ascii=False) if args.json else prompt + text)
    return 0


def cmd_perplexity(args) -> int:
    from kpipe.tasks.lm.predict import read_documents_file

    documents = read_documents_file(args.file, documents=args.documents)
    model_dir = export_of(args, "lm", "kpipe perplexity", signature="score")
    from kpipe.tasks.lm.predict import perplexity

    figures = perplexity(model_dir, documents)
    if args.json:
        print(json.dumps(figures))
    else:
        print(f"{figures['perplexity_per_word']:.2f} perplexity per word, {figures['bits_per_character']:.4f} bits per "
              f"character ({figures['documents']} documents, {figures['words']} words, {figures['tokens']} tokens)")
    return 0
