"""How long parsing a large request body stops the server's other threads (reliability finding 13).

A ticker thread wakes every millisecond and records its longest gap while the main thread parses a 16 MiB body
(the server's default --max-request-mb): once with one `json.loads` (the server before), once with
`kpipe.serving.json_pieces.loads` (now, the parsed body then freed a slice at a time as the server frees it),
alternating which goes first, repeated. Also the whole parse's time: the price of the pieces. Bodies: two million
short strings (the costliest parse per byte), 1,024 texts of 16 KB (an answered maximum request), and rows of token
ids.

Usage: python benchmarks/json_freeze.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time

from kpipe.serving import json_pieces

MIB = 2**20


def bodies() -> dict[str, bytes]:
    text = "delayed again, thanks a lot " * (16_000 // 28)
    return {
        "2M short strings": json.dumps({"instances": ["ok"] * (16 * MIB // 6)}).encode(),
        "1,024 texts of 16 KB": json.dumps({"instances": [text] * 1024}).encode(),
        "token-id rows": json.dumps({"instances": [list(range(k, k + 128)) for k in range(25_000)]}).encode(),
    }


def longest_gap(parse, body: bytes) -> tuple[float, float]:
    """(the ticker's longest gap, the parse's time) in seconds, while `parse(body)` runs."""
    done, gaps = threading.Event(), [0.0]

    def tick():
        last = time.perf_counter()
        while not done.is_set():
            time.sleep(0.001)
            now = time.perf_counter()
            gaps[0] = max(gaps[0], now - last)
            last = now

    ticker = threading.Thread(target=tick)
    ticker.start()
    time.sleep(0.05)
    gaps[0] = 0.0
    started = time.perf_counter()
    parse(body)
    took = time.perf_counter() - started
    done.set()
    ticker.join()
    return gaps[0], took


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    # each parsed body dropped as the server drops it: at once before, emptied a slice at a time now
    ways = {"json.loads": json.loads, "json_pieces.loads": lambda body: json_pieces.release(json_pieces.loads(body))}
    print(f"{'body':<22} {'MiB':>5} {'parser':<18} {'longest gap ms (median, max)':>29} {'parse ms (median)':>18}")
    for name, body in bodies().items():
        results = {way: [] for way in ways}
        for repeat in range(args.repeats):
            order = list(ways) if repeat % 2 == 0 else list(ways)[::-1]
            for way in order:
                results[way].append(longest_gap(ways[way], body))
        for way, measured in results.items():
            gaps, took = [1000 * g for g, _ in measured], [1000 * t for _, t in measured]
            print(f"{name:<22} {len(body) / MIB:>5.1f} {way:<18} {statistics.median(gaps):>20.1f} {max(gaps):>8.1f} "
                  f"{statistics.median(took):>18.1f}")


if __name__ == "__main__":
    main()
