"""A uvicorn HTTP protocol that closes connections whose request line and headers arrive too slowly, or grow past a
byte budget."""

from __future__ import annotations

import logging

log = logging.getLogger(__name__)


# nginx refuses request lines and headers past 4 x 8 KiB by default, Envoy past 60 KiB; TF Serving's clients send
# well under 1 KiB. The parser buffers what it has not finished (httptools appends to one bytes object per URL or
# header value: 20 MiB of URL cost 3.25 s of the event loop's CPU, 80 MiB of header 41 s), so the bound is in bytes.
MAX_HEADER_BYTES = 64 << 10


def too_large_response(max_bytes: int) -> bytes:
    body = ('{"error": "the request line and headers are over %d bytes"}' % max_bytes).encode()
    return (b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: application/json\r\n"
            b"connection: close\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body))


def header_timeout_protocol(seconds: float, max_bytes: int = MAX_HEADER_BYTES, write_timeout: float = 30.0):
    """uvicorn's HTTP protocol (httptools) closing a connection whose request line and headers take over `seconds`
    to arrive (uvicorn itself waits for them forever, so slow clients could hold every connection) or grow past
    `max_bytes` (answered 431: uvicorn and httptools set no limit), and dropping one whose client has not read
    what the server writes for `write_timeout` seconds (uvicorn waits for it to drain forever: 512 clients that
    pipeline requests and never read held every connection slot until a restart)."""
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    except ImportError:  # httptools comes with uvicorn[standard]; without it, uvicorn's h11 (no header timeout)
        log.warning("httptools is not installed: --header-timeout-s is not enforced (pip install 'kpipe[serve]')")
        return "h11"

    class HeaderTimeoutProtocol(HttpToolsProtocol):
        _header_timer = None
        _write_timer = None
        _header_bytes = -1  # bytes of the request line and headers so far; -1 once they are complete

        def data_received(self, data: bytes) -> None:
            if self.cycle is None or self.cycle.response_complete:  # between requests: a new one starts
                self._start_header_timer()
            super().data_received(data)  # at most max_bytes plus one read are ever buffered
            if self._header_bytes >= 0:  # the headers did not end in this data: all of it was request line/headers
                self._header_bytes += len(data)
                if self._header_bytes > max_bytes and not self.transport.is_closing():
                    self.transport.write(too_large_response(max_bytes))
                    self.transport.close()

        def connection_made(self, transport) -> None:
            super().connection_made(transport)
            self._start_header_timer()

        def _start_header_timer(self) -> None:
            self._header_bytes = max(self._header_bytes, 0)
            if self._header_timer is None:
                self._header_timer = self.loop.call_later(seconds, self._headers_too_slow)

        def _headers_too_slow(self) -> None:
            self._header_timer = None
            if not self.transport.is_closing():
                self.transport.close()

        def on_headers_complete(self) -> None:
            self._header_bytes = -1
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None
            super().on_headers_complete()

        def pause_writing(self) -> None:  # the transport's buffer is full: the client is not reading
            super().pause_writing()
            if self._write_timer is None:
                self._write_timer = self.loop.call_later(write_timeout, self._writes_too_slow)

        def resume_writing(self) -> None:
            if self._write_timer is not None:
                self._write_timer.cancel()
                self._write_timer = None
            super().resume_writing()

        def _writes_too_slow(self) -> None:
            self._write_timer = None
            self.transport.abort()  # not close(): that waits for the buffer to drain, which is what never happens

        def connection_lost(self, exc) -> None:
            for timer in (self._header_timer, self._write_timer):
                if timer is not None:
                    timer.cancel()
            self._header_timer = self._write_timer = None
            super().connection_lost(exc)

    return HeaderTimeoutProtocol
