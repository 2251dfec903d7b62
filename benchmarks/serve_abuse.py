"""`kpipe serve` under hostile load on 127.0.0.1: do well-behaved clients notice?

Well-behaved clients (4 threads, each with its own keep-alive connection, one tweet per request) are
measured alone and while, in turn:
  (a) slow clients hold connections: 150 sockets trickling request headers a byte at a time (and
      reconnecting when the server cuts them off), plus 10 that send headers and then a trickling body;
  (b) clients send maximum-size bodies (just under --max-request-mb, 16 MiB by default): 60 KB texts as many
      as fit, and one 2 MiB text (refused: over --max-text-kb);
  (c) clients ask for huge row counts: 50,000 rows in one body (413 by --max-rows-per-request) and
      4 x --max-batch-size rows (answered in chunks that interleave with everyone else's);
  (d) a new version is published every 2 s (copied and renamed in, as `kpipe run` does);
  (e) a broken version is published (a corrupt saved_model.pb), then a good one after it;
  (f) 200 clients pipeline 200 metadata requests each and never read the answers (dropped after
      --write-timeout-s, then back);
  (g) endless URLs and headers: 4 connections sending a request line, and 4 a header, that never ends
      (431 past 64 KiB, then they come back);
  (h) 16 MiB bodies in parallel, 4 clients at once (what --max-bodies-mb holds by default): half of them two
      million short strings each (the costliest parse, refused with 413 after it), half 1,024 texts of 16 KB;
  (i) a LiteRT export of the same model served beside it, asked by 8 clients at once for different texts,
      each answer checked against that text's answer asked alone (the abusers count wrong answers).
For each: the good clients' requests, failures, p50/p99 latency and p99 against p99 alone (measured
in the same run, before and after the abuse phases; the ratio uses the worse of the two), the
server's peak RSS, the cores the server kept busy while the good clients were measured, and the CPU seconds
the abusers' process used (it shares the machine's cores with the server). The abuse phases run in one order in
odd repeats and the reverse in even ones; the table shows each repeat. The abusers run in a process of their own
(as other clients would), the good clients in this one. Loopback only; every loop is bounded in time and stops
by itself.

Usage (from the repository root):
    python benchmarks/serve_abuse.py                       # trains a small sentiment-bigrams first (~1 min)
    python benchmarks/serve_abuse.py --model saved_models/sentiment-bigrams/1 --seconds 15 --repeats 2
"""

from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from serve_load import Server, load  # run as `python benchmarks/serve_abuse.py`: a sibling

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
MAX_REQUEST_MB, MAX_BATCH = 16, 256  # the server's defaults
SERVE_OPTIONS = ["--max-request-mb", str(MAX_REQUEST_MB), "--max-batch-size", str(MAX_BATCH), "--header-timeout-s",
                 "5", "--body-timeout-s", "10", "--write-timeout-s", "5", "--poll-seconds", "0.5",
                 "--limit-concurrency", "512"]
TEXTS = ["@united thank you, the crew was great", "3 hours on the tarmac again", "ok flight I guess",
         "lost my bag, again", "the new seats are lovely", "why is every flight delayed"]


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of process `pid` so far (its threads together)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


# === The abusers: each runs until `stop` is set ===

def slow_clients(port: int, stop: threading.Event, count: int = 150, body_count: int = 10):
    header = b"POST /v1/models/m:predict HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    sockets: dict[int, tuple[socket.socket, int, bool]] = {}

    def connect(i):
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=1)
            s.setblocking(False)
            if i < body_count:  # headers whole, then a body that trickles
                s.sendall(b"POST /v1/models/m:predict HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n")
            sockets[i] = (s, 0, i < body_count)
        except OSError:
            sockets.pop(i, None)

    for i in range(count):
        connect(i)
    while not stop.wait(0.2):
        for i in range(count):
            if i not in sockets:
                connect(i)
                continue
            s, sent, body = sockets[i]
            try:
                s.send(b"x" if body else header[sent % len(header):sent % len(header) + 1])
                sockets[i] = (s, sent + 1, body)
            except (BlockingIOError, InterruptedError):
                pass
            except OSError:  # cut off by the server: come back
                s.close()
                connect(i)
    for s, _, _ in sockets.values():
        s.close()


def post_loop(port: int, stop: threading.Event, body: bytes):
    while not stop.is_set():
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        try:
            connection.request("POST", "/v1/models/m:predict", body, {"Content-Type": "application/json"})
            connection.getresponse().read()
        except (OSError, http.client.HTTPException):
            pass
        finally:
            connection.close()


def big_bodies(port: int, stop: threading.Event):
    """Bodies just under --max-request-mb: texts just under --max-text-kb (64 KiB), as many as fit (answered,
    in calls of at most --max-batch-kb of text), and one 2 MiB text (413: over --max-text-kb)."""
    word = "delayed again, thanks a lot "
    text = word * (60_000 // len(word))
    accepted = json.dumps({"instances": [text] * ((MAX_REQUEST_MB * 2**20 - 1000) // (len(text) + 3))}).encode()
    refused = json.dumps({"instances": [word * (2**21 // len(word))]}).encode()
    workers = [threading.Thread(target=post_loop, args=(port, stop, body)) for body in (accepted, refused)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()


def huge_counts(port: int, stop: threading.Event):
    refused = json.dumps({"instances": [""] * 50_000}).encode()            # 413: over the row limit
    chunked = json.dumps({"instances": ["a delayed flight"] * (4 * MAX_BATCH)}).encode()  # served in chunks
    workers = [threading.Thread(target=post_loop, args=(port, stop, body)) for body in (refused, chunked)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()


def publish_copy(folder: Path, source: Path, broken: bool = False) -> int:
    numbers = [int(p.name) for p in folder.iterdir() if p.name.isdigit()]
    number = max(numbers) + 1
    tmp = folder / f".bench-{number}"
    shutil.copytree(source, tmp)
    if broken:
        (tmp / "saved_model.pb").write_bytes(b"not a SavedModel")
    tmp.rename(folder / str(number))
    return number


def new_versions(folder: Path, source: Path, stop: threading.Event):
    while not stop.wait(2.0):
        publish_copy(folder, source)


def broken_version(folder: Path, source: Path, stop: threading.Event):
    publish_copy(folder, source, broken=True)
    if not stop.wait(4.0):
        publish_copy(folder, source)  # and a good one after it: served again


def never_read(port: int, stop: threading.Event, count: int = 200, burst: int = 200):
    """Clients that pipeline a burst of metadata requests (no model call: the cheapest answers) and never read the
    answers: the server's writes stall once the buffers fill, and it drops them after --write-timeout-s; each comes
    back when dropped (noticed by peeking, which reads nothing)."""
    request = b"GET /v1/models/m/metadata HTTP/1.1\r\nHost: x\r\n\r\n" * burst
    sockets: dict[int, socket.socket] = {}

    def connect(i):
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=1)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.sendall(request)
            s.setblocking(False)
            sockets[i] = s
        except OSError:
            sockets.pop(i, None)

    for i in range(count):
        connect(i)
    while not stop.wait(0.5):
        for i in range(count):
            s = sockets.get(i)
            if s is not None:
                try:
                    if s.recv(1, socket.MSG_PEEK) != b"":
                        continue  # answers wait unread: still held
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError:
                    pass
                s.close()  # dropped by the server (reset or closed): come back
            connect(i)
    for s in sockets.values():
        s.close()


def endless_heads(port: int, stop: threading.Event, each: int = 4):
    """Connections whose request line (an endless URL) or one header never ends; back when cut off."""
    starts = [b"GET /v1/models/" , b"POST /v1/models/m:predict HTTP/1.1\r\nHost: x\r\nX-Endless: "]

    def loop(start: bytes):
        chunk = b"a" * 65536
        while not stop.is_set():
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
                    s.sendall(start)
                    while not stop.is_set():
                        s.sendall(chunk)
            except OSError:  # 431 and closed: come back
                stop.wait(0.05)

    workers = [threading.Thread(target=loop, args=(start,)) for start in starts for _ in range(each)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()


def parallel_max_bodies(port: int, stop: threading.Event, clients: int = 4):
    """Bodies just under --max-request-mb from 4 clients at once, as many as --max-bodies-mb holds (4 x 16 MiB by
    default): short strings (the costliest parse; 413 for their rows) and 1,024 texts of 16 KB (answered)."""
    limit = MAX_REQUEST_MB * 2**20 - 1000
    short = json.dumps({"instances": ["ok"] * (limit // 6)}).encode()
    text = "delayed again, thanks a lot " * (16_000 // 28)
    long = json.dumps({"instances": [text] * min(4 * MAX_BATCH, limit // (len(text) + 4))}).encode()
    workers = [threading.Thread(target=post_loop, args=(port, stop, short if k % 2 else long))
               for k in range(clients)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()


def litert_clients(port: int, stop: threading.Event, notes, clients: int = 8):
    """8 clients asking the LiteRT export at once, each answer compared with the answer to that text alone."""
    texts = [f"{word} flight number {k}" for k, word in enumerate(("great", "awful", "late", "fine") * 8)]

    def ask(connection, text):
        connection.request("POST", "/v1/models/lite:predict", json.dumps({"instances": [text]}),
                           {"Content-Type": "application/json"})
        reply = connection.getresponse()
        return reply.status, reply.read()

    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    expected = {text: ask(connection, text)[1] for text in texts}  # one at a time
    connection.close()
    wrong, answered = [0] * clients, [0] * clients

    def client(k):
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        i = k
        while not stop.is_set():
            text = texts[i % len(texts)]
            i += clients
            try:
                status, body = ask(connection, text)
            except (OSError, http.client.HTTPException):
                connection.close()
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
                continue
            answered[k] += 1
            wrong[k] += status != 200 or body != expected[text]
        connection.close()

    workers = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    notes.put(f"LiteRT: {sum(wrong)} wrong answers of {sum(answered)}")


ABUSES = {
    "(a) slow clients hold connections": lambda port, folder, source, stop: slow_clients(port, stop),
    "(b) maximum-size bodies": lambda port, folder, source, stop: big_bodies(port, stop),
    "(c) huge row counts": lambda port, folder, source, stop: huge_counts(port, stop),
    "(d) a new version every 2 s": lambda port, folder, source, stop: new_versions(folder, source, stop),
    "(e) a broken version published": lambda port, folder, source, stop: broken_version(folder, source, stop),
    "(f) clients that never read": lambda port, folder, source, stop: never_read(port, stop),
    "(g) endless URLs and headers": lambda port, folder, source, stop: endless_heads(port, stop),
    "(h) 16 MiB bodies, 4 at once": lambda port, folder, source, stop: parallel_max_bodies(port, stop),
    "(i) LiteRT export, 8 clients at once": lambda port, folder, source, stop, notes: litert_clients(port, stop,
                                                                                                   notes),
}


def abuse_process(name: str, port: int, folder, source, stop, notes, cpu) -> None:
    abuse = ABUSES[name]
    if abuse.__code__.co_argcount == 5:  # it reports what it saw
        abuse(port, folder, source, stop, notes)
    else:
        abuse(port, folder, source, stop)
    cpu.value = cpu_seconds(os.getpid())


def phase(server: Server, seconds: float, abuse: str | None = None, folder=None, source=None):
    """The good clients for `seconds`, alone or while the abuse named `abuse` runs. The abusers run in a process
    of their own, as other clients would: their Python work (building, sending and reading big bodies) must not
    hold the good clients' interpreter lock and count as the server's latency."""
    context = multiprocessing.get_context("fork")
    stop, abuse_stop, notes, peak = threading.Event(), context.Event(), context.Queue(), [rss_mib(server.process.pid)]
    abuser, abuser_cpu = None, context.Value("d", 0.0)
    if abuse is not None:
        abuser = context.Process(target=abuse_process, args=(abuse, server.port, folder, source, abuse_stop, notes,
                                                             abuser_cpu))
        abuser.start()

    def watch():
        while not stop.wait(0.2):
            peak[0] = max(peak[0], rss_mib(server.process.pid))

    watcher = threading.Thread(target=watch)
    watcher.start()
    time.sleep(1.0 if abuse is not None else 0)  # the abuse under way before the good clients are measured
    server_cpu = cpu_seconds(server.process.pid)
    latencies, failures = load(server.port, TEXTS, clients=4, seconds=seconds)
    server_cpu = cpu_seconds(server.process.pid) - server_cpu
    stop.set()
    abuse_stop.set()
    watcher.join(timeout=120)
    if abuser is not None:
        abuser.join(timeout=120)
    note = notes.get(timeout=5) if abuser is not None and not notes.empty() else ""
    return latencies, failures, peak[0], note, server_cpu, abuser_cpu.value


def quantile(values, q):
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] if len(values) > 1 else float("nan")


def train_small_model(folder: Path) -> Path:
    subprocess.run([sys.executable, "-m", "kpipe", "run", "sentiment-bigrams", "--set", "data.limit=4000",
                    "--set", "training.epochs=2", "--set", "evaluation.baseline=false",
                    "--set", f'export.dir="{folder}"'], check=True, stdout=subprocess.DEVNULL)
    return folder / "sentiment-bigrams" / "1"


def litert_export(version: Path) -> Path:
    """The LiteRT export of `version` (`kpipe export --format litert`), written beside it once."""
    folder = version.with_name(f"{version.name}-litert")
    if not folder.is_dir():
        subprocess.run([sys.executable, "-m", "kpipe", "export", str(version), "--format", "litert"], check=True,
                       stdout=subprocess.DEVNULL)
    return folder


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", help="a version folder to serve (default: train a small sentiment-bigrams)")
    parser.add_argument("--seconds", type=float, default=10, help="good clients' time per phase")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--only", default="abcdefghi",
                        help="the abuse phases to run, by letter (default: abcdefghi)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="kpipe-serve-abuse-"))
    try:
        source = Path(args.model) if args.model else train_small_model(work / "trained")
        lite = litert_export(source) if "i" in args.only else None
        rows, notes = [], []
        for repeat in range(args.repeats):
            folder = work / f"served-{repeat}"
            folder.mkdir()
            shutil.copytree(source, folder / "1")
            server = Server(str(folder), SERVE_OPTIONS, export_dir=str(folder.parent),
                            others=(f"lite={lite}",) if lite else ())
            try:
                names = [name for name in ABUSES if name[1] in args.only]
                names = names if repeat % 2 == 0 else names[::-1]
                alone = [phase(server, args.seconds)]
                results = {name: phase(server, args.seconds, name, folder, source) for name in names}
                alone.append(phase(server, args.seconds))
                reference = max(quantile(a[0], 99) for a in alone)
                for name, (latencies, failures, peak, note, server_cpu, abuser_cpu) in [
                        ("alone, before", alone[0]), *results.items(), ("alone, after", alone[1])]:
                    if note:
                        notes.append(f"repeat {repeat + 1}, {name}: {note}")
                    p99 = quantile(latencies, 99)
                    rows.append((repeat + 1, name, len(latencies), failures, 1000 * quantile(latencies, 50),
                                 1000 * p99, p99 / reference, peak, server_cpu / args.seconds, abuser_cpu))
                served = next(m["version"] for m in json.loads(_get(server.port, "/v1/models"))["models"]
                              if m["name"] == "m")
                print(f"repeat {repeat + 1}: the server answered throughout and ended on version {served}; "
                      f"its log has {sum('keeping version' in line for line in server.log)} 'keeping version' "
                      f"line(s)", flush=True)
            finally:
                server.stop()
        print(f"\n{'repeat':>6}  {'phase':<36} {'requests':>8} {'failed':>6} {'p50 ms':>7} {'p99 ms':>7} "
              f"{'p99/alone':>9} {'RSS MiB':>8} {'server cores':>12} {'abuser CPU s':>12}")
        for repeat, name, count, failed, p50, p99, ratio, peak, server_cores, abuser_cpu in rows:
            print(f"{repeat:>6}  {name:<36} {count:>8} {failed:>6} {p50:>7.1f} {p99:>7.1f} {ratio:>9.2f} "
                  f"{peak:>8.0f} {server_cores:>12.2f} {abuser_cpu:>12.1f}")
        for note in notes:
            print(note)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _get(port: int, path: str) -> bytes:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request("GET", path)
        return connection.getresponse().read()
    finally:
        connection.close()


if __name__ == "__main__":
    main()
