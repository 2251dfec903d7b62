"""The forecast pipelines beside every baseline (naive, seasonal naive, MSTL, AutoETS), at two horizons, one run.

Each pipeline runs through `run_pipeline` (its own config and split; `--set` overrides applied to
all) in a temporary export folder, once per horizon. Every run scores the model, its ablations and
the baselines on the same test origins (rolling origin, every test window), so each row compares
like with like. Prints test MAE and MAPE, the ratio to the best baseline, the validation MAE of
the model without its recurrent part (what the RNN is worth, and whether the run kept it), interval
coverage and seconds.

Usage: python benchmarks/forecast_vs_statistical.py [--pipelines electricity-mstl electricity-seasonal-ar weather-ar]
           [--horizons electricity-mstl=24,48 weather-ar=7,14] [--set key=value ...] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time

from kpipe.tasks.named_pipelines import load_pipeline

from kpipe.tasks.runner import run_pipeline

HORIZONS = {"electricity-mstl": [24, 48], "electricity-seasonal-ar": [24, 48], "weather-ar": [7, 14]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pipelines", nargs="+", default=list(HORIZONS))
    parser.add_argument("--horizons", nargs="*", default=[], metavar="PIPELINE=H1,H2",
                        help="horizons per pipeline (default: electricity 24,48 half-hours, weather 7,14 days)")
    parser.add_argument("--set", action="append", default=[], help="override for every run, e.g. training.epochs=1")
    parser.add_argument("--json", help="also write the rows to this file")
    args = parser.parse_args()
    horizons = HORIZONS | {k: [int(h) for h in v.split(",")] for k, v in (item.split("=") for item in args.horizons)}

    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for name in args.pipelines:
            for horizon in horizons[name]:
                config = load_pipeline(name, [f"preprocessing.horizon={horizon}", f'export.dir="{folder}"', *args.set])
                started = time.perf_counter()
                metrics = run_pipeline(config).metrics
                test, validation = metrics["test"], metrics["validation_mae"]
                rows.append({
                    "pipeline": name, "horizon": horizon, "test_windows": metrics["data"]["test_windows"],
                    "mae": {k: v["mae"] for k, v in test.items()}, "mape": {k: v["mape"] for k, v in test.items()},
                    "best_baseline": metrics["best_baseline"], "vs_best": metrics["model_vs_best_baseline_mae"],
                    "validation_mae": validation, "rnn_kept": metrics["recurrent_correction"]["kept"],
                    "coverage": metrics["intervals"]["test_coverage"],
                    "train_seconds": metrics["train_seconds_this_run"],
                    "baseline_seconds": {k: v["seconds"] for k, v in metrics["baselines"].items()},
                    "run_seconds": round(time.perf_counter() - started, 1)})
                print(json.dumps(rows[-1]), flush=True)

    print("\n| pipeline | horizon | model MAE | naive | seasonal naive | MSTL | AutoETS | model / best (which) "
          "| RNN worth on validation | 80 % / 95 % covered | train s | MSTL s | AutoETS s |\n"
          "|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        mae, val = r["mae"], r["validation_mae"]
        rnn = f"{1 - val['model'] / val['model_without_rnn']:+.1%}" if "model_without_rnn" in val else "–"
        rnn += "" if r["rnn_kept"] else " (switched off)"
        print(f"| {r['pipeline']} | {r['horizon']} | {mae['model']:.4g} | {mae['naive']:.4g} | "
              f"{mae['seasonal_naive']:.4g} | {mae['mstl']:.4g} | {mae['auto_ets']:.4g} | "
              f"{r['vs_best']:.3f} ({r['best_baseline']}) | {rnn} | "
              f"{100 * r['coverage']['80']:.1f} / {100 * r['coverage']['95']:.1f} | {r['train_seconds']:.0f} | "
              f"{r['baseline_seconds']['mstl']:.0f} | {r['baseline_seconds']['auto_ets']:.0f} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)


if __name__ == "__main__":
    main()
