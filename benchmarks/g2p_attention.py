"""g2p-attention on CMUdict: train within a stated CPU budget, then WER/PER on the test split,
greedy vs beam search from the same trained model, next to published anchors.

Budget: `--epochs` passes over the ~114k training pronunciations (early stopping may end sooner);
the script prints the training time it took. Anchors (CMUdict, stress removed): g2p-seq2seq
transformer WER 20.2%, Phonetisaurus 24.4%, DBLSTM-CTC 25.8% (Yao & Zweig 2015 report PER too).

Usage: python benchmarks/g2p_attention.py --epochs 10 [--beam 4] [--limit 0]
"""

from __future__ import annotations

import argparse
import json
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402

from kpipe.datasets.pairs import load_pairs  # noqa: E402
from kpipe.models.seq2seq import Seq2SeqParts  # noqa: E402
from kpipe.pipelines import load_pipeline, run_pipeline  # noqa: E402
from kpipe.preprocessing.token_pairs import TokenTable  # noqa: E402
from kpipe.sequence_metrics import error_rates  # noqa: E402
from kpipe.tasks.translate import TRANSLATOR_FILE, Translator, translate_batches  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--beam", type=int, default=4)
    parser.add_argument("--limit", type=int, default=0, help="distinct words to use (0 = all)")
    args = parser.parse_args()
    config = load_pipeline("g2p-attention", [f"training.epochs={args.epochs}", f"data.limit={args.limit}"])
    started = time.perf_counter()
    result = run_pipeline(config)
    total = time.perf_counter() - started
    m = result.metrics
    print(f"Trained {m['epochs_trained']} epoch(s) in {m['train_seconds_this_run']:.0f} s "
          f"({total:.0f} s with data, evaluation and export) on {os.cpu_count()} CPU cores")
    print(f"greedy: WER {100 * m['word_error_rate']:.2f}%  PER {100 * m['token_error_rate']:.2f}%  "
          f"({m['decode_seconds']:.1f} s for {m['data']['test_sources']} words)")

    # Beam search with the same trained weights.
    spec = json.loads((result.export_dir / TRANSLATOR_FILE).read_text(encoding="utf-8"))
    model = keras.saving.load_model(result.export_dir / "model.keras")
    beam_config = config.model.__class__(**{**config.model.__dict__, "beam_width": args.beam})
    translator = Translator(Seq2SeqParts.from_model(model), TokenTable(spec["source_vocabulary"], ""),
                            TokenTable(spec["target_vocabulary"], " "), config.preprocessing, beam_config)
    references = load_pairs(config.data).references("test")
    sources = list(references)
    started = time.perf_counter()
    outputs, _ = translate_batches(translator, sources)
    seconds = time.perf_counter() - started
    beam = error_rates([o.split() for o in outputs], [[r.split() for r in references[s]] for s in sources])
    print(f"beam {args.beam}: WER {100 * beam['word_error_rate']:.2f}%  PER {100 * beam['token_error_rate']:.2f}%  "
          f"({seconds:.1f} s)")
    print("anchors (WER): g2p-seq2seq transformer 20.2%, Phonetisaurus 24.4%, DBLSTM-CTC 25.8%; target <= 25%")


if __name__ == "__main__":
    main()
