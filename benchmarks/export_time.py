"""Seconds to write a run's SavedModel: kpipe's `write_saved_model` against Keras' own way,
`ExportArchive.track(...)` on every object the export holds (the reference), inside real pipeline runs.

`ExportArchive.track` looks for lookup tables by walking the tracked objects as SavedModel saving does, and
in that walk TensorFlow traces the default serving signature of every Keras model it meets: one more full
forward trace per model per export, for a function the export does not keep. And saving an endpoint as a
tf.function traces it once more inside the save (its cache keys differ there), though the run has already
traced it to evaluate. kpipe finds the tables with a checkpoint walk, which traces nothing, and saves each
endpoint as the graph it has already traced (tests/unit/exports pins the trace count: 1). A fixed cost per
export: every run, every test that exports.

Each pipeline is run on a small slice for one epoch (`--repeats` + 1 runs, the first a warm-up), the export
written one way or the other, alternating; only the export is timed. Medians and spreads are printed.

    python benchmarks/export_time.py [--repeats 3] [--pipelines sentiment-bilstm g2p-attention ...]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

SLICES = {"sentiment-bilstm": ["data.limit=300", "model.units=[4]"], "sentiment-transformer": ["data.limit=300"],
          "g2p-attention": ["data.limit=300"], "names-char": ["data.limit=300"],
          "lm-bible": ["data.limit=2000", "preprocessing.sequence_length=32", "model.num_layers=1"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--pipelines", nargs="+", default=list(SLICES), choices=list(SLICES))
    args = parser.parse_args()

    import keras

    from kpipe import load_pipeline, run_pipeline
    from kpipe.exports import saved_model

    kpipe_way = saved_model.write_saved_model

    def keras_way(path, *, tracked, endpoints):
        archive = keras.export.ExportArchive()
        for item in tracked:
            archive.track(item)
        for name, function in endpoints.items():
            archive.add_endpoint(name, function)
        archive.write_out(str(path), verbose=False)
        saved_model.manifest.update(path, signatures={name: saved_model.describe_signature(function)
                                                      for name, function in endpoints.items()})

    print(f"Seconds to write the export of a one-epoch run on a small slice, {args.repeats} runs each way, "
          "alternating:")
    for pipeline in args.pipelines:
        seconds = {"kpipe": [], "keras": []}

        def timed(write, way):
            def wrapper(*a, **k):
                started = time.perf_counter()
                try:
                    return write(*a, **k)
                finally:
                    seconds[way].append(time.perf_counter() - started)
            return wrapper

        with tempfile.TemporaryDirectory() as work:
            def run(way, index):
                saved_model.write_saved_model = timed(kpipe_way if way == "kpipe" else keras_way, way)
                run_pipeline(load_pipeline(pipeline, ["training.epochs=1", "evaluation.baseline=false",
                                                      *SLICES[pipeline], f'export.dir="{work}/{index}-{way}"']))

            run("kpipe", "warm-up")
            seconds["kpipe"].clear()
            for repeat in range(args.repeats):
                for way in (("kpipe", "keras") if repeat % 2 == 0 else ("keras", "kpipe")):
                    run(way, repeat)
        saved_model.write_saved_model = kpipe_way
        medians = {way: statistics.median(runs) for way, runs in seconds.items()}
        print(f"  {pipeline:22s} kpipe {medians['kpipe']:5.2f} s ({min(seconds['kpipe']):.2f}-"
              f"{max(seconds['kpipe']):.2f})   ExportArchive.track {medians['keras']:5.2f} s "
              f"({min(seconds['keras']):.2f}-{max(seconds['keras']):.2f})   saved {medians['keras'] - medians['kpipe']:.2f} s")


if __name__ == "__main__":
    main()
