"""The sub-parsers of the commands that answer with an export: predict, forecast, generate, translate, embed,
similar, tag. Nothing here imports TensorFlow."""

from __future__ import annotations

import argparse

from kpipe.cli.arguments import FILE_HELP, MODEL_HELP, SHARED, add_table_args


def add_model_and_texts(p: argparse.ArgumentParser, func, answers: str) -> None:
    """MODEL, texts and --file, and the table options: commands that answer each input text."""
    p.add_argument("model", help=MODEL_HELP)
    p.add_argument("texts", nargs="*", help="texts (or --file, or lines on standard input)")
    p.add_argument("--file", help=FILE_HELP)
    add_table_args(p, answers)
    p.set_defaults(func=func)


def add_predict(sub, commands) -> None:
    predict = sub.add_parser(
        "predict", parents=[SHARED["json"],
        SHARED["export_dir"]], help="classify texts with an exported model",
                             formatter_class=argparse.RawDescriptionHelpFormatter,
                             description="Print label, probability and text for each input (tab-separated), or "
                                         "write a table of predictions with --output.",
                             epilog="""examples:
  kpipe predict sentiment-bilstm "great crew, thanks!" "late again"
  kpipe predict sentiment-bilstm --file tweets.txt --json
  kpipe predict sentiment-bilstm --file tweets.csv --column text --output predictions.csv
  kpipe predict imdb-bigrams --file reviews.parquet --column review --output predictions.parquet
  kpipe predict imdb-bigrams --file 'reviews/*.parquet' --column review --output predictions/
  kpipe predict vitaminc-minilm --pair "Paris: the city has 2.1 million people." "Paris has 5 million people."
  kpipe predict vitaminc-minilm --file pairs.csv --column evidence --pair-column claim --output answers.csv
""")
    predict.add_argument("model", help="an export folder (saved_models/NAME/VERSION), a folder of versions, "
                                       "or a pipeline name (its latest export)")
    predict.add_argument("texts", nargs="*", help="texts to classify (else --file, else standard input)")
    predict.add_argument("--file", help="a table (.csv, .tsv, .parquet, .jsonl; read by --column), a text file (one "
                                        "per line), or shards (a quoted glob or a folder: one output shard each)")
    predict.add_argument("--pair", nargs=2, action="append", metavar=("FIRST", "SECOND"),
                         help="a pair of texts, for models trained on pairs (data.text_pair_column); repeatable")
    predict.add_argument("--pair-column", help="pair models: the table --file's column of second texts (the "
                                               "first from --column)")
    add_table_args(predict, "the predicted label, its probability and every class's probability")
    predict.set_defaults(func=commands.cmd_predict)


def add_forecast(sub, commands) -> None:
    forecast = sub.add_parser(
        "forecast", parents=[SHARED["json"], SHARED["export_dir"]],
        help="forecast the next horizon with an exported forecaster",
        description="Read the most recent window of the model's feature columns from a CSV/TSV/Parquet file "
                    "(oldest row first) and print the next horizon of the target, in original units.")
    forecast.add_argument("model", help=MODEL_HELP)
    forecast.add_argument("--input", required=True, metavar="FILE",
                          help="table with the model's feature columns (see the export's features.json) and, "
                               "optionally, its time column; at least `window` rows")
    forecast.set_defaults(func=commands.cmd_forecast)


def add_generate(sub, commands) -> None:
    generate = sub.add_parser(
        "generate", parents=[SHARED["json"], SHARED["export_dir"]],
        help="write text from a prompt (language models) or sample names (name generators)",
        description="With a language model (task lm): continue --prompt, greedy unless --temperature, --top-k, "
                    "--top-p or --beam-search say otherwise. With a name generator (task generate): sample --count "
                    "new names, all in one batched call.",
        epilog='examples:\n  kpipe generate lm-bible --prompt "In the beginning" --top-p 0.9 --seed 1\n'
               "  kpipe generate names-char --prefix Al --count 10 --temperature 0.8",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    generate.add_argument("model", help=MODEL_HELP)
    lm = generate.add_argument_group("language models (task lm)")
    lm.add_argument("--prompt", action="append", default=[], help="text to continue (repeat it for several prompts)")
    lm.add_argument("--max-new-tokens", type=int, default=0, metavar="N",
                    help="tokens to write after the prompt (default: 64, or what the context leaves)")
    lm.add_argument("--top-p", type=float, default=1.0, help="sample from the smallest set of tokens whose "
                                                              "probabilities reach p, in (0, 1] (default 1 = all)")
    lm.add_argument("--beam-search", action="store_true", help="the likeliest continuation of 4 beams (the "
                                                                "export's beam_search) instead of sampling")
    names = generate.add_argument_group("name generators (task generate)")
    names.add_argument("--prefix", default="", help='names start with this, e.g. "Al"')
    names.add_argument("--count", type=int, default=10, help="how many names (default 10)")
    names.add_argument("--category", default="", help="e.g. a country such as italy (see the export's "
                                                      "generator.json for the known ones)")
    both = generate.add_argument_group("sampling (both)")
    both.add_argument("--temperature", type=float, default=None,
                      help="below 1 safer, more typical text, above 1 wilder (names: > 0, default 1; language "
                           "models: default 0 = greedy unless --top-k or --top-p is given, then 1)")
    both.add_argument("--top-k", type=int, default=0, help="sample only among the k likeliest tokens or "
                                                            "characters (0 = all)")
    both.add_argument("--seed", type=int, help="same seed, same text")
    generate.set_defaults(func=commands.cmd_generate)


def add_perplexity(sub, commands) -> None:
    perplexity = sub.add_parser(
        "perplexity", parents=[SHARED["json"], SHARED["export_dir"]],
        help="score a text file with an exported language model (perplexity per word, bits per character)",
        description="Scores the documents of --file with the export's `score` signature: perplexity per "
                    "whitespace-separated word and bits per character, figures that compare across tokenizers.")
    perplexity.add_argument("model", help=MODEL_HELP)
    perplexity.add_argument("--file", required=True, help="a UTF-8 text file (.gz too): a document per line, or as "
                                                          "--documents says")
    perplexity.add_argument("--documents", choices=("lines", "paragraphs", "articles"), default="lines",
                            help="what one document of --file is, as the pipelines' data.documents: a line, lines up "
                                 "to a blank line, or WikiText's lines from one ' = Title = ' heading to the next "
                                 "(default: lines)")
    perplexity.add_argument("--paragraphs", dest="documents", action="store_const", const="paragraphs",
                            help="the same as --documents paragraphs")
    perplexity.set_defaults(func=commands.cmd_perplexity)


def add_text_commands(sub, commands) -> None:
    translate = sub.add_parser(
        "translate", parents=[SHARED["json"],
        SHARED["export_dir"]], help="decode texts with an exported sequence-to-sequence model "
                                                 "(e.g. spellings to phonemes)",
                               description="Print each input and its decoded output, tab-separated. Unseen "
                                           "characters map to the unknown token, an empty input gives an empty "
                                           "output, inputs over the model's max_source_length are cut.")
    add_model_and_texts(translate, commands.cmd_translate, answers="the decoded output")

    embed = sub.add_parser(
        "embed", parents=[SHARED["json"],
        SHARED["export_dir"]], help="sentence embeddings from an exported transformer classifier",
                           description="Print each text and its embedding (masked mean of the encoder outputs).")
    add_model_and_texts(embed, commands.cmd_embed, answers="the embedding")

    similar = sub.add_parser("similar", parents=[SHARED["export_dir"]],
                             help="rank sentences by cosine similarity to a query",
                             description="Embed the query and every sentence with an exported transformer "
                                         "classifier; print the k closest, best first.")
    similar.add_argument("model", help=MODEL_HELP)
    similar.add_argument("--query", required=True, help="the sentence to compare with")
    similar.add_argument("--file", help="sentences, one per line (default: standard input)")
    similar.add_argument("-k", type=int, default=10, help="how many to print (default 10)")
    similar.set_defaults(func=commands.cmd_similar)


def add_tag(sub, commands) -> None:
    tag = sub.add_parser(
        "tag", parents=[SHARED["export_dir"]], help="mark the entities (or any tags) of texts with an exported tagger",
        description="Print each text with its entities marked ([PER Barack Obama] visited [LOC Paris]); --format "
                    "jsonl prints the words, their tags and the entities (label, character start and end, text, "
                    "score) as JSON, one line per text. Words are split at spaces and around punctuation.")
    add_model_and_texts(tag, commands.cmd_tag, answers="the marked text, the tags and the entities (JSON)")
    tag.add_argument("--format", choices=("text", "jsonl"), default="text", help="text (default) or jsonl")
    tag.add_argument("--conll", action="store_true",
                     help="--file is a CoNLL column file (a word per line, a blank line between sentences): print it, "
                          "or write it to --output, with each word's predicted tag as a new last column, the words "
                          "not split again (conlleval and seqeval read the result)")
    tag.add_argument("--token-column", type=int, default=0,
                     help="with --conll: the column of the words (default 0, the first; -1 the last)")


def add_answer(sub, commands) -> None:
    answer = sub.add_parser(
        "answer", parents=[SHARED["json"], SHARED["export_dir"]],
        help="answer questions from a passage with an exported reader (extractive QA)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Print the answer span of each question: its exact characters in the context, their character "
                    "offsets and the span's probability. A context longer than the model's window is read in "
                    "overlapping windows.",
        epilog='examples:\n  kpipe answer squad-minilm --question "What causes rain to fall?" --context "Rain falls '
               'under gravity."\n  kpipe answer squad-minilm --question "Who founded it?" --context-file passage.txt\n'
               "  kpipe answer squad-minilm --file questions.csv --output answers.csv   # question, context columns\n"
               '  kpipe answer squad-minilm --question "Who founded it?" --context-file passage.txt --n-best 5')
    answer.add_argument("model", help=MODEL_HELP)
    answer.add_argument("--question", action="append", default=[], help="a question (repeat it for several "
                                                                        "questions on the same context)")
    answer.add_argument("--context", help="the passage the answers are taken from")
    answer.add_argument("--context-file", metavar="FILE", help="read the passage from a UTF-8 text file (.gz too)")
    answer.add_argument("--file", help="a table (.csv, .tsv, .parquet, .jsonl) of questions and their contexts")
    answer.add_argument("--question-column", default="question", help="--file's column of questions (default "
                                                                      "'question')")
    answer.add_argument("--context-column", default="context", help="--file's column of contexts (default 'context')")
    answer.add_argument("--output", metavar="FILE", help="write --file's rows with the answer, start, end and score "
                                                         "to FILE (.csv, .tsv, .parquet or .jsonl), with a progress bar")
    answer.add_argument("--overwrite", action="store_true", help="replace --output FILE if it exists (refused "
                                                                 "otherwise)")
    answer.add_argument("--n-best", type=int, default=0, metavar="K",
                        help="also list each --question's K likeliest spans over all windows, with their "
                             "probabilities (1-20; --json: an n_best list)")
    answer.set_defaults(func=commands.cmd_answer)
