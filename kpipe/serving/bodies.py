"""Request bodies: read within their own limits (size, arrival time), and held within a budget across all requests."""

from __future__ import annotations

import asyncio
import contextlib
import re

from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request


class BodyBudget:
    """The bytes of request bodies the server holds, all requests together, bounded: a request that would pass the
    budget gets a 503 with Retry-After at once (before its body is read, when it declares its length) instead of the
    process growing until it is killed (511 parallel 16 MiB bodies were 8 GiB). Single-threaded: the event loop's."""

    def __init__(self, limit: int):
        self.limit, self.held = limit, 0

    @contextlib.contextmanager
    def share(self):
        """A request's share: `take(n)` as its body arrives; all of it given back when the request is answered."""
        taken = [0]

        def take(size: int) -> None:
            if self.held + size > self.limit:
                raise HTTPException(503, f"the server holds {self.held} bytes of request bodies, its budget is "
                                         f"{self.limit} (--max-bodies-mb); retry shortly",
                                    headers={"Retry-After": "1"})
            self.held += size
            taken[0] += size

        try:
            yield take
        finally:
            self.held -= taken[0]


async def read_body(request: Request, limit: int, timeout: float, take=lambda size: None) -> bytearray:
    """The request's body, within --max-request-mb and the body timeout; `take(n)` (a `BodyBudget` share) is
    asked for its bytes before they are held: the declared length first, then what arrives beyond it."""

    def too_large(size: str) -> HTTPException:
        return HTTPException(413, f"the request body{size} is over the limit of {limit} bytes; send fewer "
                                  "instances per request, or start the server with a larger --max-request-mb")

    declared = request.headers.get("content-length")
    declared = int(declared) if declared is not None and re.fullmatch(r"[0-9]+", declared) else None
    if declared is not None and declared > limit:
        raise too_large(f" ({declared} bytes)")
    reserved = declared or 0
    take(reserved)
    body = bytearray()
    try:
        # one deadline for the whole body (a timer per chunk cost the event loop a task for each of a 16 MiB
        # body's hundreds of chunks)
        async with asyncio.timeout(timeout):
            async for chunk in request.stream():
                if len(body) + len(chunk) > reserved:
                    take(len(body) + len(chunk) - reserved)
                    reserved = len(body) + len(chunk)
                body += chunk
                if len(body) > limit:
                    raise too_large("")
    except ClientDisconnect:  # the client went away mid-body: nobody to answer, nothing worth a traceback
        raise HTTPException(499, "the client closed the connection before sending its whole body") from None
    except TimeoutError:
        raise HTTPException(408, f"the request body did not arrive within {timeout:g} s "
                                 "(--body-timeout-s)") from None
    return body  # bytes-like as it is: a copy of 16 MiB would hold the event loop for milliseconds
