"""The word-vector commands: neighbors, analogy, similarity, map.
"""

from __future__ import annotations

import sys

from kpipe.cli.commands import import_tensorflow_quietly
from kpipe.cli.export_commands import SENTENCE_ENCODERS, export_of, file_lines
from kpipe.errors import KpipeError


def _word_vectors(args):
    from kpipe.vectors import word_vectors

    if args.model:
        import_tensorflow_quietly()  # the export's Keras model holds the vectors
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
            texts += file_lines("--texts-file", args.texts_file)
        args.model = args.source
        model_dir = export_of(args, SENTENCE_ENCODERS, "kpipe map --texts", signature="embed")
        from kpipe.vectors.sentence_embeddings import embed_texts

        return texts, embed_texts(model_dir, texts), None
    if sum(bool(x) for x in (args.words, args.top, args.file)) != 1:
        raise KpipeError("say which words to map: --words w1 w2 ..., --top N or --file words.txt (one of them)")
    given_groups = {}
    if args.file:
        lines = [line.strip() for line in file_lines("--file", args.file)]
        if any(("\t" in line or "," in line) for line in lines):
            given_groups = maps.parse_groups(lines, args.file)  # word<TAB>group lines colour the map
            words = list(given_groups)
        else:
            words = lines
    import_tensorflow_quietly()
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

    table = maps.parse_groups(file_lines("--groups", args.groups), args.groups) if args.groups else None
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
