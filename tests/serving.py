"""A real `kpipe serve` subprocess on 127.0.0.1 and a plain HTTP client (the standard library's), for tests."""

from __future__ import annotations

import contextlib
import http.client
import json
import queue
import re
import subprocess
import sys
import threading
import time


class Server:
    def __init__(self, process: subprocess.Popen, port: int, lines: list[str]):
        self.process, self.port, self.lines = process, port, lines

    def request(self, method: str, path: str, body: bytes | str | dict | None = None,
                headers: dict | None = None) -> tuple[int, dict]:
        """(HTTP status, JSON body) of one request on a fresh connection."""
        if isinstance(body, dict):
            body = json.dumps(body)
        if isinstance(body, str):
            body = body.encode("utf-8")
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            connection.request(method, path, body=body, headers=headers or {})
            reply = connection.getresponse()
            return reply.status, json.loads(reply.read())
        finally:
            connection.close()

    def post(self, path: str, body) -> tuple[int, dict]:
        return self.request("POST", path, body)

    def get(self, path: str) -> tuple[int, dict]:
        return self.request("GET", path)


@contextlib.contextmanager
def served(*args: str, cwd, timeout: float = 180):
    """`kpipe serve ARGS --port 0` in `cwd`, until its "Listening on" line; stopped on exit."""
    process = subprocess.Popen([sys.executable, "-m", "kpipe", "serve", *args, "--port", "0"], cwd=cwd,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []
    found: queue.Queue = queue.Queue()

    def read():
        for line in process.stdout:
            lines.append(line)
            match = re.search(r"^Listening on http://127\.0\.0\.1:(\d+)", line)
            if match:
                found.put(int(match.group(1)))
        found.put(None)

    threading.Thread(target=read, daemon=True).start()
    try:
        try:
            port = found.get(timeout=timeout)
        except queue.Empty:
            port = None
        assert port is not None, "the server did not start:\n" + "".join(lines)[-3000:]
        yield Server(process, port, lines)
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()


def wait_for(condition, timeout: float = 60, every: float = 0.5):
    """Poll `condition()` until it is truthy; its last value."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(every)
