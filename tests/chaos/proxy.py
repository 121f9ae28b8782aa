"""A loopback TCP proxy that can be cut: `python -m tests.chaos.proxy --listen-port P --target-port T`.

SIGUSR1 cuts: every connection is reset (SO_LINGER 0) and the listening socket closes, so clients get
ECONNRESET on open connections and ECONNREFUSED on new ones. SIGUSR2 listens again. One thread, one
selector: the proxy forwards bytes and never parses them.
"""

from __future__ import annotations

import argparse
import contextlib
import selectors
import signal
import socket
import struct
from types import FrameType

CHUNK = 65536
POLL_S = 0.05
SEND_TIMEOUT_S = 5.0


class Proxy:
    """Forwards every accepted connection to the target port; cut and restore on request."""

    def __init__(self, listen_port: int, target_port: int) -> None:
        self.listen_port = listen_port
        self.target_port = target_port
        self.selector = selectors.DefaultSelector()
        self.listener: socket.socket | None = None
        self.peers: dict[socket.socket, socket.socket] = {}
        self.pending: dict[socket.socket, bytearray] = {}
        self.want_cut = False
        self.want_restore = False

    def listen(self) -> None:
        """Opens the listening socket on the fixed port."""
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.listen_port))
        listener.listen(256)
        listener.setblocking(False)
        self.selector.register(listener, selectors.EVENT_READ, "accept")
        self.listener = listener

    def cut(self) -> None:
        """Resets every connection and stops listening."""
        if self.listener is not None:
            self.selector.unregister(self.listener)
            self.listener.close()
            self.listener = None
        for sock in list(self.peers):
            self._drop(sock, reset=True)

    def serve_forever(self) -> None:
        """Runs the loop until the process is killed."""
        while True:
            if self.want_cut:
                self.want_cut = False
                self.cut()
            if self.want_restore:
                self.want_restore = False
                if self.listener is None:
                    self.listen()
            for key, _ in self.selector.select(POLL_S):
                sock = key.fileobj
                assert isinstance(sock, socket.socket)
                if key.data == "accept":
                    self._accept(sock)
                elif sock in self.peers:
                    self._forward(sock)

    def _accept(self, listener: socket.socket) -> None:
        try:
            client, _ = listener.accept()
        except BlockingIOError:
            return
        try:
            upstream = socket.create_connection(("127.0.0.1", self.target_port), timeout=5)
        except OSError:
            _reset(client)
            return
        for sock in (client, upstream):
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.selector.register(sock, selectors.EVENT_READ, "data")
        self.peers[client], self.peers[upstream] = upstream, client

    def _forward(self, sock: socket.socket) -> None:
        try:
            data = sock.recv(CHUNK)
        except BlockingIOError:
            return
        except OSError:
            self._drop(sock, reset=True)
            return
        if not data:
            self._drop(sock, reset=False)
            return
        try:
            # Loopback buffers are large and HTTP here is request/response, so a send rarely waits; a
            # peer that stops reading altogether is dropped after SEND_TIMEOUT_S instead of hanging us.
            self.peers[sock].settimeout(SEND_TIMEOUT_S)
            self.peers[sock].sendall(data)
            self.peers[sock].setblocking(False)
        except OSError:
            self._drop(sock, reset=True)

    def _drop(self, sock: socket.socket, reset: bool) -> None:
        peer = self.peers.pop(sock, None)
        pair = [sock] if peer is None else [sock, peer]
        if peer is not None:
            self.peers.pop(peer, None)
        for each in pair:
            with contextlib.suppress(KeyError, ValueError):
                self.selector.unregister(each)
            if reset:
                _reset(each)
            else:
                each.close()


def _reset(sock: socket.socket) -> None:
    """Closes with SO_LINGER 0, which sends RST instead of FIN."""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


def main(argv: list[str] | None = None) -> int:
    """Parses the ports, installs the cut/restore signals and serves."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--listen-port", type=int, required=True)
    parser.add_argument("--target-port", type=int, required=True)
    args = parser.parse_args(argv)
    proxy = Proxy(args.listen_port, args.target_port)

    def on_cut(signum: int, frame: FrameType | None) -> None:
        proxy.want_cut = True

    def on_restore(signum: int, frame: FrameType | None) -> None:
        proxy.want_restore = True

    signal.signal(signal.SIGUSR1, on_cut)
    signal.signal(signal.SIGUSR2, on_restore)
    proxy.listen()
    proxy.serve_forever()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
