"""A real `kpipe serve`, in a subprocess or a thread, and a plain HTTP client."""

from __future__ import annotations

import contextlib
import http.client
import json
import queue
import re
import subprocess
import sys
import threading

from tests.helpers import wait_for, without_modules


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
def served(*args: str, cwd, timeout: float = 180, blocked: tuple[str, ...] = ()):
    """`kpipe serve ARGS --port 0` in `cwd`, until its "Listening on" line; stopped on exit. With `blocked`,
    in a process where those modules cannot be imported."""
    command = ["-m", "kpipe"] if not blocked else ["-c", without_modules(*blocked) + (
        "import runpy\nsys.argv = ['kpipe', *sys.argv[1:]]\nrunpy.run_module('kpipe', run_name='__main__')\n")]
    process = subprocess.Popen([sys.executable, *command, "serve", *args, "--port", "0"], cwd=cwd,
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


@contextlib.contextmanager
def served_in_thread(*args: str, cwd):
    """`kpipe serve ARGS --port 0` set up as the command does, served by this process in a thread over real
    HTTP (no TensorFlow start-up: for the families' REST checks; the command has its subprocess tests)."""
    from kpipe.cli.commands import open_serving
    from kpipe.cli.parser import build_parser
    from kpipe.serving.app import http_server

    with contextlib.chdir(cwd):  # names resolve, and newer versions are looked for, from `cwd` as in the command
        models, sock, options = open_serving(build_parser().parse_args(["serve", *args, "--port", "0"]))
        server = http_server(models, options)
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        try:
            assert wait_for(lambda: server.started or not thread.is_alive(), every=0.05), "no start in 60 s"
            assert server.started, "the server thread ended before it started"
            yield Server(None, sock.getsockname()[1], [])
        finally:
            server.should_exit = True
            thread.join(timeout=30)
            sock.close()
