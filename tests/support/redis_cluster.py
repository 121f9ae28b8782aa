"""Starts a private, throw-away 3-master Redis Cluster on free loopback ports (no Docker, no replicas)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import redis
from redis.cluster import RedisCluster

from hookline.adapters.redis.cluster import close_cluster

MASTERS = 3
# The cluster bus listens on port + 10000: both must be free, and below 65536.
BUS_OFFSET = 10_000


def _port_is_free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_cluster_ports(count: int) -> list[int]:
    """Returns count ports whose bus ports (port + 10000) are free too."""
    ports: list[int] = []
    for _ in range(200):
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = int(sock.getsockname()[1])
        if port + BUS_OFFSET < 65_536 and port not in ports and _port_is_free(port + BUS_OFFSET):
            ports.append(port)
            if len(ports) == count:
                return ports
    raise RuntimeError("no free ports for a Redis Cluster")


@contextmanager
def _node(binary: str, port: int, data_dir: Path) -> Iterator[None]:
    process = subprocess.Popen(
        [
            binary,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--cluster-enabled",
            "yes",
            "--cluster-config-file",
            f"nodes-{port}.conf",
            "--cluster-node-timeout",
            "2000",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(data_dir),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        client = redis.Redis(host="127.0.0.1", port=port)
        for _ in range(200):  # up to 10 s for the node to accept connections
            try:
                client.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.05)
        else:
            raise RuntimeError(f"cluster node on {port} did not start")
        client.close()
        yield
    finally:
        process.terminate()
        process.wait(timeout=10)


@contextmanager
def running_cluster(masters: int = MASTERS) -> Iterator[str]:
    """Yields a `redis://host:port` URL of one node of a fresh cluster of `masters` (every slot covered).

    redis-cli gives each master an equal range of slots, the first node started the lowest.
    """
    binary, cli = shutil.which("redis-server"), shutil.which("redis-cli")
    if binary is None or cli is None:
        raise FileNotFoundError("redis-server and redis-cli are needed for a cluster")
    ports = free_cluster_ports(masters)
    with tempfile.TemporaryDirectory(prefix="hookline-cluster-") as tmp, ExitStack() as nodes:
        for port in ports:
            nodes.enter_context(_node(binary, port, Path(tmp)))
        subprocess.run(
            [cli, "--cluster", "create", *(f"127.0.0.1:{port}" for port in ports), "--cluster-yes"],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=60,
        )
        url = f"redis://127.0.0.1:{ports[0]}"
        client = RedisCluster.from_url(url)
        try:
            for _ in range(200):  # up to 10 s for every node to agree that all slots are served
                if client.cluster_info().get("cluster_state") == "ok":
                    break
                time.sleep(0.05)
            else:
                raise RuntimeError("the cluster did not reach state ok")
        finally:
            close_cluster(client)
        yield url
