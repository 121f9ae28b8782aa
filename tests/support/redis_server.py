"""Starts a private, throw-away redis-server on a free loopback port for the test session."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager

import redis


def free_port() -> int:
    """Returns a TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class RedisServer:
    """A private redis-server on a fixed loopback port that a test can stop and start again with its data.

    stop() shuts it down with SAVE (clients see their connections drop, then connections refused);
    start() brings it back on the same port from the saved data, as a restarted or failed-over Redis
    would come back.
    """

    def __init__(self, data_dir: str, port: int | None = None) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise FileNotFoundError("redis-server is not on PATH")
        self.binary = binary
        self.data_dir = data_dir
        self.port = port or free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> int:
        """Starts the server and waits until it answers; returns the wall time (ms) it first answered."""
        self.process = subprocess.Popen(
            [
                self.binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                self.data_dir,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        client = redis.Redis.from_url(self.url, socket_connect_timeout=1)
        try:
            for _ in range(400):  # up to 20 s for the server to accept connections and load its data
                try:
                    client.ping()
                    return int(time.time() * 1000)
                except (redis.ConnectionError, redis.BusyLoadingError):
                    time.sleep(0.01)
        finally:
            client.close()
        raise RuntimeError("redis-server did not start")

    def stop(self) -> None:
        """Saves the data and shuts the server down (SHUTDOWN SAVE); waits for the process to end."""
        assert self.process is not None
        client = redis.Redis.from_url(self.url)
        try:
            client.shutdown(save=True)
        except redis.ConnectionError:
            pass  # the server closes the connection as it exits
        finally:
            client.close()
        self.process.wait(timeout=10)
        self.process = None

    def close(self) -> None:
        """Ends the server if it still runs (no save)."""
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=10)
            self.process = None


@contextmanager
def restartable_redis() -> Iterator[RedisServer]:
    """Yields a started RedisServer of this test's own (REDIS_URL is not used: the test stops it)."""
    with tempfile.TemporaryDirectory(prefix="hookline-redis-") as data_dir:
        server = RedisServer(data_dir)
        try:
            server.start()
            yield server
        finally:
            server.close()


@contextmanager
def running_redis() -> Iterator[str]:
    """Yields the URL of a redis-server that lives as long as the context (REDIS_URL wins when set)."""
    if os.environ.get("REDIS_URL"):
        yield os.environ["REDIS_URL"]
        return
    binary = shutil.which("redis-server")
    if binary is None:
        raise FileNotFoundError("redis-server is not on PATH")
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="hookline-redis-") as data_dir:
        process = subprocess.Popen(
            [
                binary,
                "--port",
                str(port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                data_dir,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        url = f"redis://127.0.0.1:{port}/0"
        try:
            client = redis.Redis.from_url(url)
            for _ in range(200):  # up to 10 s for the server to accept connections
                try:
                    client.ping()
                    break
                except redis.ConnectionError:
                    time.sleep(0.05)
            else:
                raise RuntimeError("redis-server did not start")
            client.close()
            yield url
        finally:
            process.terminate()
            process.wait(timeout=10)
