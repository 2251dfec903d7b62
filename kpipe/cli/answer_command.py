"""`kpipe answer`: questions on a passage (--question with --context or --context-file), or a --file table of
questions and contexts, answered by a reader export (SavedModel, or ONNX / LiteRT without TensorFlow); --n-best
lists each question's likeliest spans."""

from __future__ import annotations

import json

from kpipe.cli.export_commands import existing_file, write_answers, export_of
from kpipe.errors import KpipeError
from kpipe.portable.reader import N_BEST_MOST


def cmd_answer(args) -> int:
    """Each --question on --context (or --context-file), or every row of a --file table of questions and contexts."""
    from kpipe.cli import batch_predict
    from kpipe.datasets.files import is_table, read_text

    if not 0 <= args.n_best <= N_BEST_MOST:
        raise KpipeError(f"--n-best must be between 1 and {N_BEST_MOST} (0: the answer alone). Received: {args.n_best}")
    table = output = None
    if args.file:
        if args.n_best:
            raise KpipeError("--n-best lists candidates for --question answers; a --file table gets one answer per row")
        if args.question or args.context is not None or args.context_file:
            raise KpipeError("give questions with --question and --context (or --context-file), or a --file table of "
                             "them, not both")
        if not is_table(existing_file("--file", args.file)):
            raise KpipeError(f"--file {args.file} is not a table (.csv, .tsv, .parquet, .jsonl): give one with "
                             f"'{args.question_column}' and '{args.context_column}' columns")
        output = batch_predict.check_output(args.output, args.file, overwrite=args.overwrite) if args.output else None
        table = batch_predict.read_texts(args.file, args.question_column, pair_column=args.context_column,
                                         options=("--question-column", "--context-column"))
        questions, contexts = table.texts, table.pairs
    else:
        if args.output:
            raise KpipeError("--output writes the answers to the rows of a --file table; without one, the answers "
                             "are printed")
        if not args.question:
            raise KpipeError('nothing to answer: pass --question "..." with --context "..." (or --context-file FILE), '
                             "or --file questions.csv")
        if (args.context is None) == (args.context_file is None):
            raise KpipeError("pass the passage with --context TEXT or with --context-file FILE (one of them)")
        context = args.context if args.context_file is None else read_text(existing_file("--context-file",
                                                                                          args.context_file))
        questions, contexts = list(args.question), [context] * len(args.question)
    model_dir = export_of(args, "answer", "kpipe answer")  # fails fast, before TensorFlow loads
    if output:
        return write_answers(args, "answer", model_dir, table, output)
    from kpipe.tasks.answer.predict import answer_questions

    for question, found in zip(questions, answer_questions(model_dir, questions, contexts, n_best=args.n_best)):
        if args.json:
            print(json.dumps({"question": question, **found}, ensure_ascii=False))
            continue
        print(f"{question}\t{found['answer']}\t{found['score']:.4f}")
        for rank, other in enumerate(found.get("n_best", [])[1:], start=2):  # the first is the answer above
            print(f"  {rank}.\t{other['answer']}\t{other['score']:.4f}")
    return 0
