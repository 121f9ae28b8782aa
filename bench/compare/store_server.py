"""The job store in a process of its own, reached over loopback TCP: every store call is a round trip.

In AWS every DynamoDB call leaves the function's process and crosses the network; a store kept in the
engine's own process would hide that cost. This server holds one set of the in-memory stores of
tests/fakes (DynamoDB's conditional writes over dicts, checked against moto by tests/contract), metered by
counted_store as for the engine-alone row, and answers calls from any number of processes: each client
thread keeps one connection, and the server gives each connection a thread (loopback only, no
authentication: a bench, not a service). A call is (store, method,
args, kwargs) pickled over the socket (multiprocessing.connection), the reply the result or the exception
raised, rebuilt on the caller's side.

What this does not model: a DynamoDB request costs the caller more CPU than a pickle round trip (JSON, a
SigV4 signature, TLS: bench/dynamo_calls.py measures the JSON client's share), and a round trip in AWS takes
a few milliseconds where loopback takes tens of microseconds.
"""

from __future__ import annotations

import multiprocessing
import threading
from multiprocessing.connection import Client, Connection, Listener
from typing import Any

from bench.compare.counted_store import DynamoMeter, MeteredJobStore, MeteredKeyStore
from tests.fakes.jobs import FakeJobStore
from tests.fakes.keys import FakeKeyStore
from tests.fakes.schedules import FakeScheduleStore
from tests.fakes.tables import JobsTables

# Connections wait in the listen queue until the accepting thread takes them; the default (1) drops the
# connections of threads that start at once, which then hang in their handshake.
BACKLOG = 256
Address = tuple[str, int]


class _Stores:
    """The server's stores by name; a method the meter does not wrap (start-up checks) goes to the fake."""

    def __init__(self, lease_ms: int) -> None:
        self.meter = DynamoMeter()
        tables = JobsTables()
        fake_jobs, fake_keys = FakeJobStore(tables, lease_ms), FakeKeyStore()
        self._by_name: dict[str, tuple[Any, Any]] = {
            "jobs": (MeteredJobStore(fake_jobs, self.meter), fake_jobs),
            "keys": (MeteredKeyStore(fake_keys, self.meter), fake_keys),
            "schedules": (FakeScheduleStore(tables), None),
            "meter": (self.meter, None),
        }

    def method(self, store: str, name: str) -> Any:
        metered, inner = self._by_name[store]
        found = getattr(metered, name, None)
        return found if found is not None else getattr(inner, name)


def _answer(connection: Connection, stores: _Stores) -> None:
    """Answers one client connection's calls, one after another, until it closes."""
    with connection:
        while True:
            try:
                store, name, args, kwargs = connection.recv()
            except (EOFError, OSError):
                return
            try:
                reply: tuple[Any, ...] = ("ok", stores.method(store, name)(*args, **kwargs))
            except Exception as error:  # the caller raises it: a refused condition is an answer
                reply = ("raise", type(error), str(error), vars(error))
            connection.send(reply)


def serve(ready: Connection, lease_ms: int) -> None:
    """The server process: listens on a free loopback port, sends its address, answers until killed."""
    stores = _Stores(lease_ms)
    with Listener(("127.0.0.1", 0), backlog=BACKLOG) as listener:
        ready.send(listener.address)
        while True:
            try:
                connection = listener.accept()
            except OSError:  # a client gone before it was taken
                continue
            threading.Thread(target=_answer, args=(connection, stores), daemon=True).start()


def start(lease_ms: int) -> tuple[multiprocessing.Process, Address]:
    """Starts the server process; returns it and its address."""
    ours, theirs = multiprocessing.Pipe()
    process = multiprocessing.get_context("spawn").Process(target=serve, args=(theirs, lease_ms), daemon=True)
    process.start()
    if not ours.poll(60):
        process.kill()
        raise RuntimeError("the store server did not start")
    address: Address = ours.recv()
    return process, address


class RemoteStore:
    """One of the server's stores as a local object: each method call is one round trip.

    Thread-safe: each thread calls over a connection of its own, opened on its first call.
    """

    def __init__(self, address: Address, store: str) -> None:
        self._address = address
        self._store = store
        self._local = threading.local()

    def _connection(self) -> Connection:
        connection: Connection | None = getattr(self._local, "connection", None)
        if connection is None:
            connection = self._local.connection = Client(self._address)
        return connection

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)

        def call(*args: Any, **kwargs: Any) -> Any:
            connection = self._connection()
            connection.send((self._store, name, args, kwargs))
            status, *reply = connection.recv()
            if status == "ok":
                return reply[0]
            kind, message, attributes = reply
            # Rebuilt without calling __init__ (some domain errors take more than a message).
            error = kind.__new__(kind)
            error.args = (message,)
            vars(error).update(attributes)
            raise error

        return call
