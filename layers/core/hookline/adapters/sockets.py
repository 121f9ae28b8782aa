"""Socket checks shared by the adapters that keep their own connections alive (callbacks, DynamoDB)."""

from __future__ import annotations

import select
import socket
import ssl


def idle_socket_unusable(sock: socket.socket) -> bool:
    """Tells whether a kept-alive socket, idle between exchanges, can no longer carry a request.

    An idle HTTP/1.1 connection has nothing to read: anything readable is an EOF (the server closed it on
    its idle timeout) or bytes no request asked for, which the next exchange would take for its answer.
    poll, not select: select refuses descriptors past FD_SETSIZE (1024), which a busy process reaches.
    """
    if isinstance(sock, ssl.SSLSocket) and sock.pending():
        return True
    try:
        poller = select.poll()
        poller.register(sock.fileno(), select.POLLIN)
        return bool(poller.poll(0))
    except (OSError, ValueError):  # closed underneath (fileno -1): unusable
        return True
