"""The server's socket, bound before any model loads: a port in use fails at once, in one line."""

from __future__ import annotations

import os
import socket

from kpipe.errors import KpipeError


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on host:port (port 0: any free port).

    Raises:
        KpipeError: the address cannot be bound, with the fix.
    """
    try:
        return socket.create_server((host, port))
    except OSError as failure:
        reason = os.strerror(failure.errno) if failure.errno else str(failure)
        raise KpipeError(f"cannot listen on {host}:{port} ({reason}); choose another port with --port, or stop "
                         "what uses it") from None
