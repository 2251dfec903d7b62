"""A uvicorn HTTP protocol that closes connections whose request headers arrive too slowly."""

from __future__ import annotations

import logging

log = logging.getLogger(__name__)


def header_timeout_protocol(seconds: float):
    """uvicorn's HTTP protocol (httptools) closing a connection whose request headers take over `seconds` to
    arrive: uvicorn itself waits for them forever, so slow clients could hold every connection."""
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    except ImportError:  # httptools comes with uvicorn[standard]; without it, uvicorn's h11 (no header timeout)
        log.warning("httptools is not installed: --header-timeout-s is not enforced (pip install 'kpipe[serve]')")
        return "h11"

    class HeaderTimeoutProtocol(HttpToolsProtocol):
        _header_timer = None

        def data_received(self, data: bytes) -> None:
            if self.cycle is None or self.cycle.response_complete:  # between requests: a new one starts
                self._start_header_timer()
            super().data_received(data)

        def connection_made(self, transport) -> None:
            super().connection_made(transport)
            self._start_header_timer()

        def _start_header_timer(self) -> None:
            if self._header_timer is None:
                self._header_timer = self.loop.call_later(seconds, self._headers_too_slow)

        def _headers_too_slow(self) -> None:
            self._header_timer = None
            if not self.transport.is_closing():
                self.transport.close()

        def on_headers_complete(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None
            super().on_headers_complete()

        def connection_lost(self, exc) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None
            super().connection_lost(exc)

    return HeaderTimeoutProtocol
