"""The lecture notes' feature table on CoNLL-2003, with all-MiniLM-L6-v2: which encoder outputs a word is read from.

The notes (after the BERT paper's Table 7) give dev F1 of BERT-base used as a frozen feature extractor under a
BiLSTM: embeddings 91.0, second-to-last hidden layer 95.6, last 94.9, sum of the last four 95.9, concatenation of
the last four 96.1, sum of all 12 layers 95.5. This script trains `ner-conll-minilm` once per `model.features`
value, the encoder frozen (`model.backbone_training = "frozen"`) under the same BiLSTM head (`model.head =
"bilstm"`), everything else the pipeline's, and prints each run's development-file entity F1 beside the notes'
figure. Each run is a normal `kpipe run` (its export lands in saved_models/ner-conll-minilm/N); settings are
the same for every row, so the rows compare the features, not a tuned head.

MiniLM is uncased and has 6 layers of 384: "sum_all" sums its 6 layers, and its absolute figures are not BERT-base's.

Usage: python benchmarks/ner_features.py --data conll2003-train.txt --dev conll2003-dev.txt \
           --preset /path/to/all-MiniLM-L6-v2 [--epochs 3] [--learning-rate 0.001] [--features last ...] \
           [--set preprocessing.sequence_length=64 ...]
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from kpipe import load_pipeline, run_pipeline  # noqa: E402

NOTES = {"embeddings": 91.0, "second_to_last": 95.6, "last": 94.9, "sum_last_four": 95.9, "concat_last_four": 96.1,
         "sum_all": 95.5}  # BERT-base, frozen features under a BiLSTM (the lecture notes' table; dev F1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="the CoNLL-2003 training file")
    parser.add_argument("--dev", required=True, help="the development file (the runs' test split)")
    parser.add_argument("--preset", required=True, help="all-MiniLM-L6-v2's Hugging Face folder (or a preset)")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--learning-rate", type=float, default=0.001)
    parser.add_argument("--features", nargs="*", default=list(NOTES), choices=list(NOTES))
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="more overrides, every row")
    args = parser.parse_args()
    rows = []
    for features in args.features:
        config = load_pipeline("ner-conll-minilm", [
            f'data.path="{args.data}"', f'data.test_path="{args.dev}"', f'model.preset="{args.preset}"',
            'model.backbone_training="frozen"', 'model.head="bilstm"', f'model.features="{features}"',
            f"training.epochs={args.epochs}", f"training.learning_rate={args.learning_rate}",
            "evaluation.baseline=false", *args.set])
        metrics = run_pipeline(config).metrics
        rows.append((features, metrics["entity_f1"] * 100, metrics["history"][-1].get("val_entity_f1", float("nan")),
                     sum(metrics["epoch_seconds"])))
        print(f"{features}: dev entity F1 {rows[-1][1]:.2f}", flush=True)
    print(f"\n{'features':<18} {'MiniLM dev F1':>13} {'val F1':>7} {'train s':>8} {'BERT-base (notes)':>18}")
    for features, f1, val, seconds in rows:
        print(f"{features:<18} {f1:>13.2f} {val * 100:>7.2f} {seconds:>8.0f} {NOTES[features]:>18.1f}")


if __name__ == "__main__":
    main()
