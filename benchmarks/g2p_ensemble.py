"""Greedy g2p decoding with several trained exports at once: their next-token log-probabilities summed at each step.

(kpipe's `Translator` given several models.)
The exports must share the split and vocabularies (the same pipeline data config; checked). Prints WER and
PER on the validation and test words for each export alone and for the ensemble, so the ensemble is judged on
validation before its test figure is read. An export of an ensemble pipeline (`model.ensemble_members`) brings
all its members. The pipeline `g2p-attention-ensemble` trains and exports such an ensemble in one run.

Usage: python benchmarks/g2p_ensemble.py EXPORT_DIR EXPORT_DIR [...] [--pipeline g2p-attention-large]
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
from kpipe.preprocessing.token_pairs import TokenTable  # noqa: E402
from kpipe.tasks.translate.signatures import Translator, load_members  # noqa: E402
from kpipe.tasks.translate.validation import decode_and_score  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("exports", nargs="+", type=Path)
    parser.add_argument("--pipeline", default="g2p-attention-large", help="whose data config and split to score on")
    args = parser.parse_args()
    config = load_pipeline(args.pipeline)
    specs = [json.loads((e / TRANSLATOR_FILE).read_text(encoding="utf-8")) for e in args.exports]
    for key in ("source_vocabulary", "target_vocabulary"):
        if any(spec[key] != specs[0][key] for spec in specs):
            raise SystemExit(f"the exports do not share their {key.replace('_', ' ')}: train them on the same data")
    source_table = TokenTable(specs[0]["source_vocabulary"], "")
    target_table = TokenTable(specs[0]["target_vocabulary"], " ")
    members = [member for e in args.exports for member in load_members(e)]
    pairs = load_pairs(config.data)
    candidates = ({str(e): [m] for e, m in zip(args.exports, members)} if len(members) == len(args.exports) else {}
                  ) | {"ensemble": members}
    greedy = dataclasses.replace(config.model, beam_width=1)
    for name, group in candidates.items():
        translator = Translator(group, source_table, target_table, config.preprocessing, greedy)
        for split in ("validation", "test"):
            started = time.perf_counter()
            rates = decode_and_score(translator, pairs.references(split), config.preprocessing.target_tokens)
            print(f"{name} {split}: WER {100 * rates['word_error_rate']:.2f}%  "
                  f"PER {100 * rates['token_error_rate']:.2f}%  ({time.perf_counter() - started:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
