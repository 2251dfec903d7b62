"""`kpipe serve` under load on 127.0.0.1: micro-batched vs one model call per request, same run.

Measures, for one export (default: the latest `imdb-bilstm` under saved_models/):
  1. the SavedModel's signature called in-process with one review at a time (no HTTP): p50/p95;
  2. a `kpipe serve` process answering single-review requests from 1, 8 and 32 concurrent clients
     (threads, each with its own keep-alive connection), for `--seconds` each: requests/s, p50/p99
     latency, and requests per model call (from the server's GET /v1/models counts); once with
     micro-batching (the default) and once with --no-batching, the plain reference.
The servers take turns (in one order in odd repeats, the reverse in even ones); every
figure is the median over `--repeats`, with the range beside it. Clients and server share the
same 2 cores, as they would on a small serving machine.

Usage (from the repository root, after `kpipe run imdb-bilstm --data ../shared/data/imdb/train.csv.gz`):
    python benchmarks/serve_load.py
    python benchmarks/serve_load.py --model saved_models/imdb-bilstm/1 --seconds 20 --repeats 2
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def reviews(csv: str, count: int = 2000) -> list[str]:
    """Texts to send: IMDB reviews when the CSV is there, else the embedded tweets."""
    import pandas as pd

    if Path(csv).is_file():
        return list(pd.read_csv(csv)["text"].sample(count, random_state=0))
    from kpipe.datasets.embedded import read

    return list(read("tweets-sentiment", "text classification")["text"][:count])


def in_process_latency(model_dir: Path, texts: list[str], calls: int = 300) -> list[float]:
    import tensorflow as tf

    from kpipe.exports.saved_model import load_saved_model

    loaded = load_saved_model(model_dir)
    serve = loaded.signatures["serving_default"]
    for text in texts[:20]:
        serve(text=tf.constant([text]))  # warm up
    times = []
    for text in texts[:calls]:
        start = time.perf_counter()
        serve(text=tf.constant([text]))["probabilities"].numpy()
        times.append(time.perf_counter() - start)
    return times


class Server:
    def __init__(self, model: str, options: list[str], export_dir: str, others: tuple[str, ...] = ()):
        args = [sys.executable, "-m", "kpipe", "serve", f"m={model}", *others, "--port", "0", "--export-dir",
                export_dir]
        self.process = subprocess.Popen(args + options, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.log: list[str] = []  # what the server printed
        for line in self.process.stdout:
            self.log.append(line)
            match = re.search(r"^Listening on http://127\.0\.0\.1:(\d+)", line)
            if match:
                self.port = int(match.group(1))
                break
        else:
            raise SystemExit("the server did not start:\n" + "".join(self.log[-20:]))
        # keep its pipe drained, and its lines
        threading.Thread(target=lambda: self.log.extend(self.process.stdout), daemon=True).start()

    def counts(self) -> dict:
        connection = http.client.HTTPConnection("127.0.0.1", self.port)
        connection.request("GET", "/v1/models")
        return json.loads(connection.getresponse().read())["models"][0]

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=30)


def load(port: int, texts: list[str], clients: int, seconds: float) -> tuple[list[float], int]:
    """`clients` threads, each on its own keep-alive connection, sending one text per request until the time is
    up; (latencies of the answered requests, failed requests: not 200, or no answer, after which the client
    reconnects)."""
    latencies: list[list[float]] = [[] for _ in range(clients)]
    failures = [0] * clients
    stop_at = time.perf_counter() + seconds

    def client(k: int):
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        i = k
        while time.perf_counter() < stop_at:
            body = json.dumps({"instances": [texts[i % len(texts)]]})
            i += clients
            start = time.perf_counter()
            try:
                connection.request("POST", "/v1/models/m:predict", body, {"Content-Type": "application/json"})
                reply = connection.getresponse()
                reply.read()
            except (OSError, http.client.HTTPException):
                failures[k] += 1
                connection.close()
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
                continue
            latencies[k].append(time.perf_counter() - start)
            failures[k] += reply.status != 200
        connection.close()

    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return [t for per_client in latencies for t in per_client], sum(failures)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q / 100 * len(ordered)))]


def spread(values: list[float], fmt: str) -> str:
    median = statistics.median(values)
    return f"{median:{fmt}}" + (f" ({min(values):{fmt}}–{max(values):{fmt}})" if len(values) > 1 else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="imdb-bilstm", help="pipeline name or export folder")
    parser.add_argument("--export-dir", default="saved_models")
    parser.add_argument("--csv", default="../shared/data/imdb/train.csv.gz", help="reviews to send")
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--timeouts", type=float, nargs="+", default=[],
                        help="also measure micro-batching with these --batch-timeout-ms values")
    args = parser.parse_args()
    modes = {"micro-batched": [], "one call per request": ["--no-batching"],
             **{f"batched, {ms:g} ms wait": ["--batch-timeout-ms", str(ms)] for ms in args.timeouts}}

    from kpipe.exports.versions import resolve_model_dir

    model_dir = resolve_model_dir(args.model, args.export_dir)
    texts = reviews(args.csv)
    words = statistics.median(len(t.split()) for t in texts)
    print(f"model {model_dir}; {len(texts)} texts, median {words:.0f} words; {os.cpu_count()} CPU cores")

    single = in_process_latency(model_dir, texts)
    print(f"in-process signature call, one text: p50 {percentile(single, 50) * 1000:.2f} ms, "
          f"p95 {percentile(single, 95) * 1000:.2f} ms ({len(single)} calls)")

    results: dict[tuple[str, int], list[dict]] = {}
    for repeat in range(args.repeats):
        order = list(modes) if repeat % 2 == 0 else list(reversed(modes))
        for mode in order:
            server = Server(str(model_dir), modes[mode], args.export_dir)
            try:
                load(server.port, texts, 4, 3)  # warm up: tracing, first calls
                for clients in args.clients:
                    before = server.counts()
                    latencies, failures = load(server.port, texts, clients, args.seconds)
                    after = server.counts()
                    calls = after["model_calls"] - before["model_calls"]
                    row = {"rps": len(latencies) / args.seconds, "p50": percentile(latencies, 50) * 1000,
                           "p99": percentile(latencies, 99) * 1000, "per_call": len(latencies) / max(calls, 1),
                           "failures": failures}
                    results.setdefault((mode, clients), []).append(row)
                    print(f"  repeat {repeat + 1}, {mode:24s} {clients:3d} clients: {row['rps']:7.1f} req/s, "
                          f"p50 {row['p50']:6.1f} ms, p99 {row['p99']:6.1f} ms, {row['per_call']:5.1f} requests "
                          f"per model call, {failures} failed", flush=True)
            finally:
                server.stop()

    print(f"\nMedian (range) over {args.repeats} repeats, {args.seconds:g} s per cell:")
    print(f"{'server':24s} {'clients':>7s} {'requests/s':>20s} {'p50 ms':>18s} {'p99 ms':>18s} {'req/call':>9s}")
    for (mode, clients), rows in sorted(results.items(), key=lambda item: (item[0][1], item[0][0])):
        print(f"{mode:24s} {clients:7d} {spread([r['rps'] for r in rows], '.1f'):>20s} "
              f"{spread([r['p50'] for r in rows], '.1f'):>18s} {spread([r['p99'] for r in rows], '.1f'):>18s} "
              f"{statistics.median(r['per_call'] for r in rows):9.1f}")
    for clients in args.clients:
        batched = statistics.median(r["rps"] for r in results[("micro-batched", clients)])
        plain = statistics.median(r["rps"] for r in results[("one call per request", clients)])
        print(f"{clients:3d} clients: micro-batching serves {batched / plain:.2f}x the requests/s of one call per "
              "request")


if __name__ == "__main__":
    main()
