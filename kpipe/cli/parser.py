"""The `kpipe` command line: `build_parser` adds one sub-parser per command, each in a function of its
own (the commands that answer with an export in `answering_parsers.py`); options several commands share come from
parent parsers (`arguments.SHARED`). The handlers are the `cmd_*` functions of `kpipe.cli.commands`,
`export_commands`, `answer_command` and `vector_commands`; nothing here imports TensorFlow.
"""

from __future__ import annotations

import argparse
import types

from kpipe.cli.answering_parsers import (add_answer, add_forecast, add_generate, add_perplexity, add_predict, add_tag,
                                         add_text_commands)
from kpipe.cli.arguments import SHARED

EXAMPLES = """\
examples:
  kpipe info
  kpipe list
  kpipe show sentiment-bilstm
  kpipe run sentiment-bilstm
  kpipe run sentiment-bilstm --set training.epochs=1 --set data.limit=2000
  kpipe run imdb-bilstm --data ../shared/data/imdb/train.csv.gz
  kpipe predict sentiment-bilstm "@united thank you, great crew!" "delayed again..."
  kpipe predict saved_models/sentiment-bilstm/1 --file tweets.txt --json
  kpipe serve sentiment-bilstm electricity-seasonal-ar --port 8501
  kpipe run names-char
  kpipe generate names-char --prefix Al --count 10 --temperature 0.8 --category italy
  kpipe run lm-bible
  kpipe generate lm-bible --prompt "In the beginning" --top-p 0.9 --seed 1
  kpipe perplexity lm-bible --file chapter.txt
  kpipe run electricity-seasonal-ar
  kpipe forecast electricity-seasonal-ar --input recent.csv
  kpipe run g2p-attention
  kpipe translate g2p-attention hello tensorflow
  kpipe run sentiment-transformer
  kpipe embed sentiment-transformer "great crew, thanks!"
  kpipe similar sentiment-transformer --query "lost my bag" --file tweets.txt -k 5
  kpipe neighbors frog -k 5
  kpipe analogy king man woman
  kpipe similarity cat dog --vectors glove.6B.100d.txt
  kpipe map glove:6B.50d --words apple banana car bus tennis golf france japan --out map.png
  kpipe compare sentiment-bilstm --out compare.png
"""

def build_parser() -> argparse.ArgumentParser:
    from kpipe.cli import answer_command, commands, export_commands, vector_commands

    handlers = types.SimpleNamespace(**{name: getattr(module, name)
                                        for module in (commands, export_commands, answer_command, vector_commands)
                                        for name in dir(module) if name.startswith("cmd_")})

    parser = argparse.ArgumentParser(
        prog="kpipe", description="Train, evaluate and export Keras sequence models as named pipelines.",
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--debug", action="store_true",
                        help="show tracebacks for errors, and TensorFlow's own C++ log lines")
    parser.add_argument("-q", "--quiet", action="store_true", help="log warnings only")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in (add_setup_commands, add_run_commands, add_tune, add_predict, add_export, add_serve, add_forecast,
                add_generate, add_perplexity, add_text_commands, add_tag, add_answer, add_word_commands, add_map,
                add_compare):
        add(sub, handlers)
    return parser


def add_setup_commands(sub, commands) -> None:
    sub.add_parser("list", help="list the named pipelines").set_defaults(func=commands.cmd_list)
    sub.add_parser("info", parents=[SHARED["json"]],
                   help="check your setup: versions, devices, data packages, runnable pipelines (paste --json into "
                        "bug reports)").set_defaults(func=commands.cmd_info)


def add_run_commands(sub, commands) -> None:
    sub.add_parser("show", parents=[SHARED["config"]], help="print the resolved config of a pipeline"
                   ).set_defaults(func=commands.cmd_show)
    sub.add_parser("run", parents=[SHARED["config"]], help="train, evaluate and export a pipeline",
                   description="Train, evaluate and export a pipeline. Rerunning the same command after an "
                               "interruption resumes from the last finished epoch.").set_defaults(func=commands.cmd_run)


def add_tune(sub, commands) -> None:
    tune = sub.add_parser(
        "tune", parents=[SHARED["config"]], help="search hyperparameters: Optuna trials, each a kpipe run",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Search the pipeline's [tune] space (or --space FILE) with Optuna. Every trial is a kpipe run\n"
                    "scored on the validation split; the study lives in a database (a SQLite file in the\n"
                    "pipeline's folder, or --storage URL), so a killed search resumes and several processes\n"
                    "or machines can work on one study at once. Writes trials.csv, best.toml (run it with\n"
                    "`kpipe run`) and optimisation-history, parameter-importance and per-epoch plots.",
        epilog="""examples:
  kpipe tune sentiment-bilstm --trials 20
  kpipe tune sentiment-bilstm --trials 20 --timeout 3600 --pruner hyperband
  kpipe tune names-char --trials 12 --include-defaults --prune-after 3
  kpipe tune sentiment-bilstm --space my-space.toml --sampler random --trials 30
  kpipe tune sentiment-bilstm --storage postgresql://user@db/kpipe --trials 100   # on every machine
  KPIPE_TUNE_STORAGE=postgresql://user:secret@db/kpipe kpipe tune sentiment-bilstm --trials 100
  kpipe run saved_models/sentiment-bilstm/tune/best.toml
""")
    tune.add_argument("--trials", type=int, default=20, help="finished trials the study should have, counting "
                                                              "every process's (default 20)")
    tune.add_argument("--timeout", type=float, help="stop starting trials after this many seconds (this process)")
    tune.add_argument("--space", help="a TOML file with the search space ([tune] table or top-level keys)")
    tune.add_argument("--storage", help="a database URL Optuna accepts (default: $KPIPE_TUNE_STORAGE, else sqlite "
                                        "in the pipeline's folder); its password is shown as *** everywhere")
    tune.add_argument("--sampler", default="tpe", help="tpe (default), random or grid (grid: choices only)")
    tune.add_argument("--pruner", default="median", help="median (default), successive_halving, hyperband or none")
    tune.add_argument("--prune-after", type=int, default=1, metavar="EPOCHS",
                      help="the earliest epoch at which a trial can be stopped (default 1); more spares slow "
                           "starters such as low learning rates")
    tune.add_argument("--seed", type=int, default=0, help="the sampler's seed (each trial's is drawn from it and "
                                                          "the trial's number, so parallel processes differ)")
    tune.add_argument("--heartbeat-seconds", type=float, default=2.0,
                      help="how often a running trial tells the study it is alive (default 2 s)")
    tune.add_argument("--grace-seconds", type=float, default=6.0,
                      help="a trial silent for longer is marked failed by the other processes (default 6 s; raise "
                           "it for machines that pause)")
    tune.add_argument("--include-defaults", action="store_true",
                      help="make the first trial the pipeline's own values (they must lie in the space), so the "
                           "table shows whether the search beat them")
    tune.add_argument("--export-best", action="store_true", help="publish the best trial's export as the "
                                                                 "pipeline's next version")
    tune.set_defaults(func=commands.cmd_tune)


def add_export(sub, commands) -> None:
    export = sub.add_parser(
        "export", parents=[SHARED["export_dir"]], help="write an export as ONNX or LiteRT, to run without "
        "TensorFlow", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Write the network of an export (a classifier, tagger, reader, name generator, language "
                    "model, translator, forecaster or word vectors; a family that cannot is refused in one line) "
                    "as ONNX (onnxruntime) or LiteRT (ai-edge-litert), with its preprocessing and decoding as data "
                    "and NumPy, into a folder beside the version (e.g. saved_models/NAME/1-onnx); the export's own "
                    "command (kpipe predict, tag, answer, generate, ...) and kpipe serve answer with it without "
                    "TensorFlow.",
        epilog="""examples:
  kpipe export sentiment-bilstm --format onnx
  kpipe export saved_models/sentiment-bigrams/1 --format litert --quantize int8
""")
    export.add_argument("model", help="an export folder, a folder of versions (the latest), or a pipeline name")
    export.add_argument("--format", required=True, choices=("onnx", "litert"), help="the runtime's format")
    export.add_argument("--quantize", default="none", choices=("none", "float16", "int8"),
                        help="int8: dynamic-range (int8 weights); float16: LiteRT only (default: none)")
    export.set_defaults(func=commands.cmd_export)


def add_serve(sub, commands) -> None:
    serve = sub.add_parser(
        "serve", parents=[SHARED["export_dir"]],
        help="serve exports over HTTP with TensorFlow Serving's REST API (micro-batched)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Serve exported models over HTTP, speaking TensorFlow Serving's REST API, so clients written\n"
                    "for TF Serving work unchanged. Concurrent requests to one model are gathered into one call\n"
                    "(micro-batching). A pipeline name or a folder of versions serves its latest version and\n"
                    "switches to a newer one when `kpipe run` publishes it. Needs: pip install 'kpipe[serve]'.",
        epilog="""examples:
  kpipe serve sentiment-bilstm
  curl -s localhost:8501/v1/models/sentiment-bilstm:predict -d '{"instances": ["great crew, thanks!"]}'
  curl -s localhost:8501/v1/models/sentiment-bilstm:predict -d '{"inputs": {"text": ["late again"]}}'
  curl -s localhost:8501/v1/models/sentiment-bilstm/metadata
  kpipe serve bilstm=saved_models/sentiment-bilstm/1 bigrams=sentiment-bigrams --port 9000
""")
    serve.add_argument("models", nargs="+", metavar="MODEL",
                       help="a pipeline name, a folder of versions or a version folder, optionally as NAME=MODEL "
                            "(the name in the URL; default: the pipeline's)")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine "
                                                           "only; 0.0.0.0 for every interface)")
    serve.add_argument("--port", type=int, default=8501, help="port (default 8501, TF Serving's REST port; 0: any "
                                                              "free port, printed at start-up)")
    serve.add_argument("--max-batch-size", type=int, default=256, help="rows per model call at most (default 256)")
    serve.add_argument("--batch-timeout-ms", type=float, default=1.0,
                       help="how long a request waits for others to share its call (default 1 ms)")
    serve.add_argument("--no-batching", action="store_true", help="one model call per request")
    serve.add_argument("--max-request-mb", type=float, default=16.0, help="larger request bodies get HTTP 413 "
                                                                         "(default 16 MiB)")
    serve.add_argument("--max-bodies-mb", type=float, default=0.0,
                       help="request bodies held at once, all clients together; a request past it gets HTTP 503 with "
                            "Retry-After (default 4 x --max-request-mb)")
    serve.add_argument("--max-rows-per-request", type=int, default=0,
                       help="rows (instances, or a generator's count) one request may ask for; more get HTTP 413 "
                            "(default 4 x --max-batch-size)")
    serve.add_argument("--max-text-kb", type=float, default=64.0,
                       help="a longer text in a request gets HTTP 413 (default 64 KiB)")
    serve.add_argument("--max-batch-kb", type=float, default=1024.0,
                       help="text per model call at most: a request with more runs as several calls that interleave "
                            "with other clients' (default 1024 KiB)")
    serve.add_argument("--limit-concurrency", type=int, default=512,
                       help="open connections and requests at most; beyond, HTTP 503 at once (default 512)")
    serve.add_argument("--header-timeout-s", type=float, default=10.0,
                       help="a connection whose request headers take longer is closed (default 10 s)")
    serve.add_argument("--write-timeout-s", type=float, default=30.0,
                       help="a client that leaves the server's answers unread this long is dropped (default 30 s)")
    serve.add_argument("--body-timeout-s", type=float, default=30.0,
                       help="a request body that takes longer to arrive gets HTTP 408 (default 30 s)")
    serve.add_argument("--poll-seconds", type=float, default=2.0,
                       help="how often folders of versions are checked for a new version (default 2 s)")
    serve.set_defaults(func=commands.cmd_serve)


def add_word_commands(sub, commands) -> None:
    neighbors = sub.add_parser("neighbors", parents=[SHARED["vectors"]], help="nearest words by cosine similarity")
    neighbors.add_argument("word")
    neighbors.add_argument("-k", type=int, default=10, help="how many (default 10)")
    neighbors.set_defaults(func=commands.cmd_neighbors)

    analogy = sub.add_parser("analogy", parents=[SHARED["vectors"]],
                             help="A is to B as ? is to C, e.g. `kpipe analogy king man woman` -> queen",
                             description="Words closest to A - B + C by cosine similarity.")
    for name in ("a", "b", "c"):
        analogy.add_argument(name, metavar=name.upper())
    analogy.add_argument("-k", type=int, default=5, help="how many (default 5)")
    analogy.set_defaults(func=commands.cmd_analogy)

    similarity = sub.add_parser("similarity", parents=[SHARED["vectors"]], help="cosine similarity of two words")
    similarity.add_argument("first")
    similarity.add_argument("second")
    similarity.set_defaults(func=commands.cmd_similarity)


def add_map(sub, commands) -> None:
    word_map = sub.add_parser(
        "map", parents=[SHARED["export_dir"]],
        help="a labelled 2-D map (PCA, t-SNE) of word vectors or sentence embeddings, as a PNG",
        description="Project word vectors (packaged GloVe, a vectors file, a word2vec export or a classifier's "
                    "learned embedding) or sentence embeddings (--texts, through an export with an embed "
                    "signature) to 2-D and draw them with their labels.",
        epilog="examples:\n  kpipe map glove:6B.50d --words apple banana car bus football tennis france japan\n"
               "  kpipe map glove:6B.50d --file words.tsv --method tsne --out map.png   # word<TAB>group lines\n"
               "  kpipe map word2vec-bible --top 100 --clusters 6 --csv coords.csv\n"
               "  kpipe map sentiment-transformer --texts \"great crew\" \"lost my bag\" \"thanks!\"",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    word_map.add_argument("source", help="glove:6B.50d, a vectors file, or an export (folder or pipeline name)")
    word_map.add_argument("--words", nargs="+", help="the words to map")
    word_map.add_argument("--top", type=int, help="map the first N words of the vocabulary (most frequent first)")
    word_map.add_argument("--file", help="words to map, one per line (or word<TAB>group lines, which colour them)")
    word_map.add_argument("--texts", nargs="+", help="sentences to embed and map (SOURCE: an embed export)")
    word_map.add_argument("--texts-file", help="sentences to embed and map, one per line")
    word_map.add_argument("--method", choices=["pca", "tsne", "umap"], default="pca",
                          help="pca (default), tsne, or umap (needs umap-learn)")
    word_map.add_argument("--groups", help="colour by a label file: word<TAB>group (or word,group) lines")
    word_map.add_argument("--clusters", type=int, default=0, help="colour by K k-means clusters of the vectors")
    word_map.add_argument("--out", default="map.png", help="the PNG to write (default map.png)")
    word_map.add_argument("--csv", help="also write the 2-D coordinates to this CSV (label, x, y, group)")
    word_map.add_argument("--title", help="the plot title")
    word_map.add_argument("--seed", type=int, default=0, help="random seed for t-SNE, UMAP and k-means")
    word_map.set_defaults(func=commands.cmd_map)


def add_compare(sub, commands) -> None:
    compare = sub.add_parser("compare", parents=[SHARED["export_dir"]],
                             help="compare runs: headline metrics, training time, differing config "
                                             "keys, and their validation curves in one PNG",
                             epilog="examples:\n  kpipe compare sentiment-bilstm            # all its versions\n"
                                    "  kpipe compare sentiment-bilstm/1 sentiment-glove --out curves.png\n"
                                    "  kpipe compare saved_models/sentiment-bilstm/tune   # a study's trials",
                             formatter_class=argparse.RawDescriptionHelpFormatter)
    compare.add_argument("runs", nargs="+", metavar="RUN",
                         help="an export folder, a pipeline name / folder of versions (all its versions), or a "
                              "kpipe tune study's folder (its trials)")
    compare.add_argument("--out", default="compare.png", help="the PNG of validation curves (default compare.png)")
    compare.set_defaults(func=commands.cmd_compare)


def parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """`parser.parse_args(argv)`, except that a command's options may come before its positional values
    (`kpipe predict MODEL --json "some text"`): argparse alone takes the texts for unknown arguments then,
    so the command's own arguments are parsed again, intermixed."""
    args, extra = parser.parse_known_args(argv)
    command = getattr(args, "command", None)
    if extra and command:
        subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        rest = argv[argv.index(command) + 1:]
        try:
            return argparse.Namespace(**{**vars(args), **vars(subparsers.choices[command].parse_intermixed_args(rest))})
        except TypeError:  # a command whose positionals cannot be intermixed: argparse's own error below
            pass
    return parser.parse_args(argv)
