"""The ASGI application: TF Serving's REST API on Starlette, run by uvicorn.

    POST /v1/models/NAME[/versions/V]:predict   {"instances": [...]} or {"inputs": ...}
    GET  /v1/models/NAME[/versions/V]           the served version's status
    GET  /v1/models/NAME[/versions/V]/metadata  its signatures (inputs, outputs, dtypes, shapes)
    GET  /v1/models                             kpipe's addition: every served model, its version and task

Errors are JSON, {"error": "..."}, as TF Serving sends them: 400 for a request that cannot be
answered as sent, 404 for an unknown model, version or path, 408 for a body that does not arrive
in time, 413 for a body or a number of rows over the limits, 500 for a failure inside the model,
503 when more connections are open than the server takes. The server keeps serving after any of them.

The work one request can cause is bounded (`ServeOptions`): its body's bytes, its rows and the length
of each text (a request above `max_batch_size` rows or `max_batch_bytes` of text is cut into calls
of that size that run one at a time beside other clients' small requests), a generator's `count`, the
depth of its JSON.
Decoding and rendering run in threads, never on the event loop, and a large body is parsed (and a large
answer rendered) in pieces that each hold the GIL for a few milliseconds (`json_pieces`), so one large
request does not stall the other clients.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from kpipe.serving import json_pieces, rest
from kpipe.serving.batching import MicroBatcher, is_bulk, text_bytes
from kpipe.serving.bodies import BodyBudget, read_body
from kpipe.serving.header_timeout import header_timeout_protocol
from kpipe.serving.repository import LoadedVersion, ModelRepository, ServedModel, first_line
from kpipe.serving.signatures import TF_SERVING_DTYPES, InputRejected

log = logging.getLogger(__name__)

# /v1/models/NAME, /v1/models/NAME/versions/V, each optionally followed by :predict or /metadata
MODEL_PATH = re.compile(r"^/v1/models/(?P<name>[^/:]+)(?:/versions/(?P<version>[^/:]+))?"
                        r"(?:(?P<verb>:[A-Za-z]+)|(?P<metadata>/metadata))?$")


# TensorFlow's inter-op threads in a server: more than the cores and the calls that can run at once, so that
# one long call never takes every thread (measured with benchmarks/serve_abuse.py's huge bodies).
MODEL_THREADS = max(8, 2 * (os.cpu_count() or 1))
# Bodies larger than this (or listing many strings: `rest.listed_strings`) are decoded (and their answers rendered)
# in a thread of their own, so a few large bodies in flight never hold the threads that decode the small requests
BULK_BODY_BYTES = 256 * 1024
# While small requests are in flight, each piece of bulk work (a large body's decoding, a bulk request's model
# call) that took t seconds is followed by 2t in which no bulk work starts: bulk work then takes at most a third of
# the time, and the cores it leaves are the small requests'. Alone, bulk requests run at full speed. Measured with
# benchmarks/serve_abuse.py: the good clients' p99 under maximum-size bodies 30-31 ms against 43-50 ms without.
BULK_PAUSE = 2.0


@dataclass
class ServeOptions:
    batching: bool = True
    max_batch_size: int = 256         # rows per call
    batch_timeout: float = 0.001      # seconds the first request of a batch waits for others
    max_request_bytes: int = 16 << 20
    max_bodies_bytes: int = 0         # request bodies held at once, all requests together; 0: 4 x max_request_bytes
    max_rows_per_request: int = 0     # rows (or a generator's `count`) one request may ask for; 0: 4 x max_batch_size
    max_text_bytes: int = 64 << 10    # one text at most
    max_batch_bytes: int = 1 << 20    # text per model call at most (a larger request runs as several calls)
    poll_seconds: float = 2.0         # how often folders of versions are checked for a new version
    threads: int = 4                  # calls running at once (requests that cannot share a call)
    limit_concurrency: int = 512      # open connections and requests at most; beyond, 503 at once
    header_timeout: float = 10.0      # seconds a client has to send a request's headers
    write_timeout: float = 30.0       # seconds a client may leave the server's answer unread before it is dropped
    body_timeout: float = 30.0        # seconds a client has to send a request's body (then 408)
    keep_alive: int = 5               # seconds an idle keep-alive connection stays open

    @property
    def row_limit(self) -> int:
        return self.max_rows_per_request or 4 * self.max_batch_size

    @property
    def bodies_budget(self) -> int:
        return self.max_bodies_bytes or 4 * self.max_request_bytes


class JSONResponse(Response):
    media_type = "application/json"

    def render(self, content) -> bytes:
        return json_pieces.dumps(content)


def error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


class ModelServer:
    """The state behind the routes: the repository, the batchers, the threads that run the models."""

    def __init__(self, repository: ModelRepository, options: ServeOptions):
        self.repository, self.options = repository, options
        # `threads` calls of small requests, and one more for the bulk lane (kpipe/serving/batching.py)
        self.executor = ThreadPoolExecutor(max_workers=options.threads + 1, thread_name_prefix="kpipe-serve")
        # JSON decoding, array conversion and rendering: off the event loop, and not in the model threads
        self.codec = ThreadPoolExecutor(max_workers=2, thread_name_prefix="kpipe-json")
        self.bulk_codec = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kpipe-json-bulk")
        # One piece of bulk work at a time in the whole server, paced (`bulk_work`): a large body's decoding, a bulk
        # model call of a batcher's bulk lane or of what no batcher gathers (translate, generate, --no-batching).
        # Decoding and calls each paced on their own could overlap, and then took two thirds of the time.
        self.bulk_turn = asyncio.Lock()
        self.small_in_flight = 0  # requests with small bodies between arrival and answer
        # Loading and warming up new versions: one thread at a lower CPU priority than the serving threads
        self.loader = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kpipe-load", initializer=_lower_priority)
        self.batchers: dict[tuple[str, int, str], MicroBatcher] = {}
        self.closing: set[asyncio.Task] = set()  # retired versions' batchers, answering what they hold
        self.bodies = BodyBudget(options.bodies_budget)
        self.counts = {name: {"requests": 0, "model_calls": 0} for name in repository.models}
        self.counts_lock = threading.Lock()  # model calls are counted from the worker threads

    def find(self, name: str, version: str | None) -> tuple[ServedModel, LoadedVersion]:
        model = self.repository.get(name)
        if model is None:
            served = ", ".join(sorted(self.repository.models))
            raise HTTPException(404, f"no model named '{name}' is served here (served: {served})")
        current = model.current
        if version is not None and version != str(current.version):
            raise HTTPException(404, f"version {version} of model '{name}' is not served (serving version "
                                     f"{current.version}; omit /versions/... for the served one)")
        return model, current

    def decode(self, name: str, current: LoadedVersion, body: bytes):
        """(signature name, signature, input arrays, row format?) of a request body (runs in a codec thread)."""
        request = None
        try:
            request = rest.parse_body(body)
            signature_name = rest.signature_name(request)
            signature = current.signatures.get(signature_name)
            if signature is None:
                raise rest.BadRequest(f"model '{name}' has no signature '{signature_name}'; it has: "
                                      f"{', '.join(sorted(current.signatures))}")
            rest.check_listed_rows(request, signature, self.options.row_limit)
            inputs, rows = rest.request_inputs(request, signature)
        except RecursionError:  # nesting the depth check let through but a conversion could not follow
            raise rest.BadRequest(rest.TOO_DEEP) from None
        finally:  # the parsed body freed a slice at a time (the arrays hold what they need)
            json_pieces.release(request)
        rest.check_rows(inputs, signature, self.options.row_limit)
        rest.check_text_sizes(inputs, self.options.max_text_bytes)
        return signature_name, signature, inputs, rows

    async def predict(self, name: str, version: str | None, body: bytes) -> Response:
        model, current = self.find(name, version)
        # large, or many rows of texts: decoded in the bulk lane, paced (a 50,000-row body's parse costs as much
        # as answering a small request, even when its answer is a 413)
        bulk = len(body) > BULK_BODY_BYTES or is_bulk(rest.listed_strings(body), 0, self.options.max_batch_size)
        if bulk:
            async with self.bulk_work():  # paced even when refused after its parse (too many rows): it cost as much
                decoded = await asyncio.get_running_loop().run_in_executor(
                    self.bulk_codec, self.decode, name, current, body)
            return await self.answer(model, current, decoded, self.bulk_codec)
        self.small_in_flight += 1
        small = True
        try:
            decoded = await asyncio.get_running_loop().run_in_executor(self.codec, self.decode, name, current, body)
            if self.bulk_rows(decoded[2]):  # bulk work after all (many short rows): it must not slow itself
                self.small_in_flight, small = self.small_in_flight - 1, False
            return await self.answer(model, current, decoded, self.codec)
        finally:
            if small:
                self.small_in_flight -= 1

    def bulk_rows(self, inputs: dict) -> bool:
        """Whether decoded `inputs` are bulk work as the micro-batcher's lanes count it (scalars, such as
        `generate`'s count and prefix, have no rows: never)."""
        first = next(iter(inputs.values()), None)
        if first is None or np.ndim(first) < 1:
            return False
        return is_bulk(len(first), int(text_bytes(inputs).sum()), self.options.max_batch_size,
                       self.options.max_batch_bytes)

    @contextlib.asynccontextmanager
    async def bulk_work(self):
        """The server's one turn for bulk work; after a piece of it that took t seconds, the turn stays taken for
        BULK_PAUSE * t more while small requests are in flight (`yield_to_small`)."""
        async with self.bulk_turn:
            started = time.perf_counter()
            try:
                yield
            finally:
                await self.yield_to_small(time.perf_counter() - started)

    async def yield_to_small(self, seconds: float) -> None:
        """After `seconds` of bulk work: wait BULK_PAUSE times as long if small requests are in flight."""
        if self.small_in_flight:
            await asyncio.sleep(BULK_PAUSE * seconds)

    async def answer(self, model: ServedModel, current: LoadedVersion, decoded: tuple, codec) -> Response:
        """The model's answer to a decoded request, rendered in `codec`."""
        loop = asyncio.get_running_loop()
        signature_name, signature, inputs, rows = decoded
        try:
            # A request decoded across a version switch runs on its (old) version alone: a batcher for it would close
            # the new version's batcher.
            if self.options.batching and signature.gatherable and current is model.current:
                outputs = await self.batcher(model.name, current, signature_name)(inputs)
            elif self.bulk_rows(inputs):  # bulk work outside the batchers: in the bulk turn, as their bulk lanes
                async with self.bulk_work():
                    outputs = await loop.run_in_executor(self.executor, self.counted(model.name, signature), inputs)
            else:
                outputs = await loop.run_in_executor(self.executor, self.counted(model.name, signature), inputs)
        except InputRejected as failure:
            raise rest.BadRequest(f"the model rejected the input: {failure}") from None
        self.counts[model.name]["requests"] += 1
        rendered = await loop.run_in_executor(codec, lambda: JSONResponse(rest.response(outputs, rows)).body)
        return Response(rendered, media_type="application/json")

    def batcher(self, name: str, current: LoadedVersion, signature_name: str) -> MicroBatcher:
        # keyed by the signature, not the name it was asked by: an alias (serving_default) shares its lanes
        key = (name, current.version, getattr(current.signatures[signature_name], "name", signature_name))
        if key not in self.batchers:
            for old in [k for k in self.batchers if k[0] == name and k[1] != current.version]:
                # A newer version is served: the old batcher answers what it holds, then its task ends.
                task = asyncio.get_running_loop().create_task(self.batchers.pop(old).close())
                self.closing.add(task)
                task.add_done_callback(self.closing.discard)
            self.batchers[key] = MicroBatcher(self.counted(name, current.signatures[signature_name]),
                                              max_batch_size=self.options.max_batch_size,
                                              timeout=self.options.batch_timeout, executor=self.executor,
                                              concurrency=self.options.threads,
                                              max_batch_bytes=self.options.max_batch_bytes,
                                              bulk_turn=self.bulk_work)
        return self.batchers[key]

    def counted(self, name: str, signature):
        """`signature`, counting its calls in the model's statistics (GET /v1/models)."""
        def run(inputs):
            with self.counts_lock:
                self.counts[name]["model_calls"] += 1
            return signature(inputs)
        return run

    def status(self, name: str, version: str | None) -> JSONResponse:
        _, current = self.find(name, version)
        return JSONResponse({"model_version_status": [{"version": str(current.version), "state": "AVAILABLE",
                                                       "status": {"error_code": "OK", "error_message": ""}}]})

    def metadata(self, name: str, version: str | None) -> JSONResponse:
        _, current = self.find(name, version)
        return JSONResponse({
            "model_spec": {"name": name, "signature_name": "", "version": str(current.version)},
            "metadata": {"signature_def": {"signature_def": {
                key: _signature_def(signature) for key, signature in sorted(current.signatures.items())}}}})

    def listing(self) -> JSONResponse:
        return JSONResponse({"models": [
            {"name": name, "version": model.current.version,  # no path: a client has no business knowing it
             "pipeline": model.current.manifest.get("pipeline"), "task": model.current.manifest.get("task"),
             "follows_latest": model.follows_latest, "signatures": sorted(model.current.signatures),
             **self.counts[name]}
            for name, model in sorted(self.repository.models.items())]})

    async def read_body(self, request: Request, take=lambda size: None) -> bytearray:
        return await read_body(request, self.options.max_request_bytes, self.options.body_timeout, take)

    async def poll_versions(self) -> None:
        """Forever: load newer versions of folders of versions (in a thread: loading takes seconds)."""
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(self.options.poll_seconds)
            try:
                await loop.run_in_executor(self.loader, self.repository.poll)
            except Exception:  # never let the poller die: the served versions keep serving
                log.exception("checking for new versions failed")


def _lower_priority() -> None:
    """Lower the calling thread's CPU priority (Linux: a thread is a task with its own nice value), so that
    loading a new version takes the cores only when serving leaves them idle."""
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)
    except (AttributeError, OSError):  # not Linux, or not allowed: loads at the usual priority
        pass


def _tensor_info(info, prefix: str) -> dict:
    return {"dtype": TF_SERVING_DTYPES.get(info.dtype.name, "DT_INVALID"),
            "tensor_shape": {"dim": [{"size": str(-1 if d is None else d), "name": ""} for d in info.shape],
                             "unknown_rank": False},
            "name": f"{prefix}_{info.name}:0"}


def _signature_def(signature) -> dict:
    return {"inputs": {name: _tensor_info(info, signature.name) for name, info in signature.inputs.items()},
            "outputs": {name: _tensor_info(info, "StatefulPartitionedCall") for name, info in
                        signature.outputs.items()},
            "method_name": "tensorflow/serving/predict"}


def build_app(repository: ModelRepository, options: ServeOptions | None = None) -> Starlette:
    """The Starlette application serving `repository` (already loaded) with `options`."""
    server = ModelServer(repository, options or ServeOptions())

    async def models(request: Request) -> Response:
        match = MODEL_PATH.match(request.url.path)
        if match is None:
            return error(404, f"unknown path {request.url.path}; see GET /v1/models")
        name, version, verb, metadata = match.group("name", "version", "verb", "metadata")
        try:
            if request.method == "POST":
                if verb != ":predict":
                    return error(404 if verb is None or verb in (":classify", ":regress") else 400,
                                 f"POST {request.url.path}: only :predict is served (use /v1/models/{name}:predict)")
                with server.bodies.share() as take:  # held until answered: the body lives that long
                    return await server.predict(name, version, await server.read_body(request, take))
            if verb is not None:
                return error(405, f"{verb} needs POST")
            return server.metadata(name, version) if metadata else server.status(name, version)
        except rest.BadRequest as bad:
            return error(400, str(bad))
        except rest.TooLarge as large:
            return error(413, str(large))
        except HTTPException as failure:
            response = error(failure.status_code, failure.detail)
            response.headers.update(failure.headers or {})
            return response
        except Exception as failure:  # a bug or a model failure: answer, log, keep serving
            log.exception("%s %s failed", request.method, request.url.path)
            return error(500, f"{type(failure).__name__}: {first_line(str(failure))}")

    async def listing(request: Request) -> Response:
        return server.listing()

    async def not_found(request: Request, exc: HTTPException) -> Response:
        return error(exc.status_code, f"{exc.detail}: {request.method} {request.url.path}; see GET /v1/models")

    @contextlib.asynccontextmanager
    async def lifespan(app):
        poller = asyncio.get_running_loop().create_task(server.poll_versions())
        try:
            yield
        finally:
            poller.cancel()
            server.executor.shutdown(wait=False, cancel_futures=True)
            server.codec.shutdown(wait=False, cancel_futures=True)
            server.bulk_codec.shutdown(wait=False, cancel_futures=True)
            server.loader.shutdown(wait=False, cancel_futures=True)

    app = Starlette(routes=[Route("/v1/models", listing, methods=["GET"]),
                            Route("/v1/models/{rest:path}", models, methods=["GET", "POST"])],
                    exception_handlers={404: not_found, 405: not_found}, lifespan=lifespan)
    app.state.server = server
    return app


def serve(repository: ModelRepository, sock, *, options: ServeOptions) -> None:
    """Serve on the bound socket `sock` (see listen.bind) until interrupted."""
    bound_host, bound_port = sock.getsockname()[:2]
    base = f"http://{bound_host}:{bound_port}"
    for name, model in sorted(repository.models.items()):
        current = model.current
        task = current.manifest.get("task", "SavedModel")
        follows = ", picks up newer versions" if model.follows_latest else ""
        print(f"Serving {name} version {current.version} ({task}, {current.path}{follows}) at "
              f"{base}/v1/models/{name}:predict", flush=True)
    batching = (f"micro-batching up to {options.max_batch_size} rows, {options.batch_timeout * 1000:g} ms"
                if options.batching else "no micro-batching")
    print(f"Listening on {base} ({batching}; at most {options.row_limit} rows and "
          f"{options.max_request_bytes / 2**20:g} MiB per request, {options.limit_concurrency} connections); "
          "Ctrl+C to stop", flush=True)
    http_server(repository, options).run(sockets=[sock])


def http_server(repository: ModelRepository, options: ServeOptions):
    """The uvicorn server of `build_app` (run it with `.run(sockets=[sock])`; `.should_exit = True` stops it)."""
    import uvicorn

    config = uvicorn.Config(build_app(repository, options), log_level="warning", access_log=False,
                            timeout_graceful_shutdown=5, limit_concurrency=options.limit_concurrency,
                            timeout_keep_alive=options.keep_alive, http=header_timeout_protocol(options.header_timeout,
                                                                         write_timeout=options.write_timeout))
    return uvicorn.Server(config)
