"""g2p-attention on CMUdict: train within a stated CPU budget, then WER/PER on the test split,
greedy vs beam search from the same trained model, next to published anchors, each labelled with its split.

Budget: `--epochs` passes over the ~114k training pronunciations (early stopping may end sooner);
the script prints the training time it took, the validation WER and loss by epoch (the pipeline keeps the
epoch with the best validation WER), and where the errors are (by word length, apostrophes, digits; the most
frequent phoneme confusions).

Anchors differ by protocol: the current CMUdict with stress removed (names and acronyms included; kpipe's split
is of this one) is harder than the older PRONALSYL-2007 CMUdict split most papers report, so only the first group
compares with kpipe's figures.

Usage: python benchmarks/g2p_attention.py [--pipeline g2p-attention] [--epochs 10] [--beam 4] [--limit 0]
                                          [--set model.average_epochs=3 ...]
       python benchmarks/g2p_attention.py --export saved_models/g2p-attention-ensemble/1
(--export: report on a run already made, without training again; an ensemble's beam search uses all its
members)
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from kpipe.datasets.pairs import load_pairs  # noqa: E402
from kpipe.portable.export_files import TRANSLATOR_FILE  # noqa: E402
from kpipe.tasks.named_pipelines import load_pipeline  # noqa: E402
from kpipe.tasks.runner import run_pipeline  # noqa: E402
from kpipe.preprocessing.token_pairs import TokenTable  # noqa: E402
from kpipe.evaluation.sequence_metrics import error_rates  # noqa: E402
from kpipe.tasks.translate.signatures import Translator, load_members, translate_batches  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pipeline", default="g2p-attention", help="a translate pipeline on CMUdict")
    parser.add_argument("--export", type=Path, help="an export of that pipeline to report on instead of training")
    parser.add_argument("--epochs", type=int, help="epochs per model (default: the pipeline's)")
    parser.add_argument("--beam", type=int, default=4)
    parser.add_argument("--limit", type=int, default=0, help="distinct words to use (0 = all)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="more config overrides, e.g. model.encoder_units=256 (repeatable)")
    args = parser.parse_args()
    overrides = [*([f"training.epochs={args.epochs}"] if args.epochs else []), f"data.limit={args.limit}", *args.set]
    if args.export:
        export_dir = args.export
        config = load_pipeline(str(export_dir / "config.toml"))
        m = json.loads((export_dir / "metrics.json").read_text(encoding="utf-8"))
        print(f"Export {export_dir}: {m['epochs_trained']} epoch(s) trained in "
              f"{m['train_seconds_this_run']:.0f} s (its last run) on {os.cpu_count()} CPU cores")
    else:
        config = load_pipeline(args.pipeline, overrides)
        started = time.perf_counter()
        result = run_pipeline(config)
        total = time.perf_counter() - started
        m, export_dir = result.metrics, result.export_dir
        print(f"Trained {m['epochs_trained']} epoch(s) in {m['train_seconds_this_run']:.0f} s "
              f"({total:.0f} s with data, evaluation and export) on {os.cpu_count()} CPU cores")
    print(f"greedy: WER {100 * m['word_error_rate']:.2f}%  PER {100 * m['token_error_rate']:.2f}%  "
          f"({m['decode_seconds']:.1f} s for {m['data']['test_sources']} words)")
    if m.get("ensemble"):
        e = m["ensemble"]
        print("ensemble members alone, validation WER: " + ", ".join(
            f"seed {r['seed']} {100 * r['val_word_error_rate']:.2f}%" for r in e["members"]))
        print("the k best together, validation WER: " + ", ".join(
            f"k={k} {100 * r:.2f}%" for k, r in e["val_word_error_rate_by_size"].items())
            + f": kept {e['kept_members']}")
    for a in ([m["checkpoint_averaging"]] if isinstance(m.get("checkpoint_averaging"), dict) else
              [a for a in m.get("checkpoint_averaging") or [] if a]):
        print(f"checkpoint averaging of epochs {a['epochs']}: validation WER "
              f"{100 * a['val_word_error_rate_averaged']:.2f}% vs {100 * a['val_word_error_rate_best_epoch']:.2f}% "
              f"for the best epoch alone: kept {a['kept']}")

    # Beam search with the same trained weights.
    spec = json.loads((export_dir / TRANSLATOR_FILE).read_text(encoding="utf-8"))
    beam_config = dataclasses.replace(config.model, beam_width=args.beam)
    translator = Translator(load_members(export_dir), TokenTable(spec["source_vocabulary"], ""),
                            TokenTable(spec["target_vocabulary"], " "), config.preprocessing, beam_config)
    references = load_pairs(config.data).references("test")
    sources = list(references)
    started = time.perf_counter()
    outputs, _ = translate_batches(translator, sources)
    seconds = time.perf_counter() - started
    beam = error_rates([o.split() for o in outputs], [[r.split() for r in references[s]] for s in sources])
    print(f"beam {args.beam}: WER {100 * beam['word_error_rate']:.2f}%  PER {100 * beam['token_error_rate']:.2f}%  "
          f"({seconds:.1f} s)")

    print("\nmember  epoch  seconds  loss    val_loss  val WER")
    epochs: dict[int, int] = {}
    for h in m["history"]:
        member = h.get("member", 1)
        epochs[member] = epochs.get(member, 0) + 1
        print(f"{member:6d}  {epochs[member]:5d}  {h.get('epoch_seconds', float('nan')):7.0f}  {h['loss']:.4f}  "
              f"{h['val_loss']:.4f}    {100 * h.get('val_word_error_rate', float('nan')):.2f}%")
    analysis = m["error_analysis"]
    print("\ntest WER by group (greedy):")
    for group, row in analysis["word_error_rate_by_group"].items():
        print(f"  {group:24s} {row['words']:6d} words  {100 * row['word_error_rate']:6.2f}%")
    print("most frequent phoneme confusions (reference → output; ∅ = missing):")
    for c in analysis["top_confusions"]:
        print(f"  {c['reference'] or '∅':>3s} → {c['output'] or '∅':3s} {c['count']:5d}")

    print("\nanchors (WER), current CMUdict without stress (the cmusphinx g2p-seq2seq README and its versions): "
          "Phonetisaurus 33.89%, 8-gram FST 33.3%, LSTM 2x512 ~31%, FST + transformer 30.3%, transformer 3x256 30.2%")
    print("anchors (WER), CMUdict PRONALSYL-2007 split (older, easier; not comparable): attention ensemble of 5 "
          "(Toshniwal & Livescu 2016) 20.2%, Phonetisaurus 24.4%, DBLSTM-CTC (Yao & Zweig 2015) 25.8%")
    print("target (issue 18): WER <= 28%, PER <= 6.5% on kpipe's split of the current CMUdict")


if __name__ == "__main__":
    main()
