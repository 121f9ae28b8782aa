"""What the comparison reads from the machine: process-tree CPU from /proc, Redis counters, arrivals."""

from __future__ import annotations

import atexit
import os
import time
from dataclasses import dataclass

import httpx
import redis

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
# One client for every call to the receiver: plain HTTP on loopback, so no certificates are loaded (an
# httpx client that loads them costs a quarter of a second of CPU on this machine).
_receiver = httpx.Client(timeout=30, verify=False)
atexit.register(_receiver.close)


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        tree.setdefault(int(fields[1]), []).append(int(name))
    return tree


def _own_cpu_s(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime + stime of the process itself


def tree_cpu_s(pids: list[int], skip: set[int] | frozenset[int] = frozenset()) -> float:
    """Returns the CPU seconds used so far by the processes and all their live descendants, leaving out
    the processes in skip (and theirs)."""
    tree = _children()
    total, stack, seen = 0.0, list(pids), set()
    while stack:
        pid = stack.pop()
        if pid in seen or pid in skip:
            continue
        seen.add(pid)
        total += _own_cpu_s(pid)
        stack += tree.get(pid, [])
    return total


def rss_bytes(pids: list[int], skip: set[int] | frozenset[int] = frozenset()) -> int:
    """Returns the resident memory of the processes and their descendants, but those in skip."""
    tree = _children()
    total, stack = 0, list(pids)
    while stack:
        pid = stack.pop()
        if pid in skip:
            continue
        try:
            with open(f"/proc/{pid}/statm") as statm:
                total += int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except OSError:
            pass
        stack += tree.get(pid, [])
    return total


def redis_calls_by_name(client: redis.Redis) -> dict[str, int]:
    """Returns the commands Redis has executed since its last CONFIG RESETSTAT, by name (`INFO
    commandstats`: the commands scripts run count under their own names, beside the EVALSHA that ran them;
    subcommands as "script|load")."""
    stats = client.info("commandstats")
    return {name.removeprefix("cmdstat_"): int(value["calls"]) for name, value in stats.items()}


def redis_calls(client: redis.Redis) -> int:
    """Returns the total commands Redis has executed since its last CONFIG RESETSTAT."""
    return sum(redis_calls_by_name(client).values())


def redis_server_cpu_s(client: redis.Redis) -> float:
    """Returns redis-server's CPU seconds (user + system) as it reports them."""
    info = client.info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


@dataclass(frozen=True)
class Arrivals:
    """Every arrival the receiver recorded since its reset."""

    times_ns: dict[str, list[int]]  # job id -> every arrival (more than one: a duplicate)

    @property
    def distinct(self) -> int:
        """Returns how many different jobs arrived."""
        return len(self.times_ns)

    @property
    def duplicates(self) -> int:
        """Returns how many arrivals repeated a job that had arrived already."""
        return sum(len(times) - 1 for times in self.times_ns.values())

    def first_ns(self, job_id: str) -> int:
        """Returns when a job first arrived."""
        return self.times_ns[job_id][0]

    def of(self, jobs: list[str]) -> Arrivals:
        """Returns the arrivals of these jobs only (a late job of an earlier scenario is not one of them)."""
        return Arrivals({job_id: self.times_ns[job_id] for job_id in jobs if job_id in self.times_ns})


def arrivals(receiver_url: str) -> Arrivals:
    """Reads the receiver's arrivals."""
    rows = _receiver.get(receiver_url + "/arrivals").json()
    times: dict[str, list[int]] = {}
    for job_id, at_ns in rows:
        times.setdefault(job_id, []).append(int(at_ns))
    return Arrivals(times)


def wait_for(  # type: ignore[no-untyped-def]
    receiver_url: str,
    count: int,
    timeout_s: float,
    tick=None,
    stall_s: float = 60.0,
    quiet_s: float = 0.0,
    run: str | None = None,
) -> Arrivals:
    """Polls the receiver until count distinct jobs (of run, when given) arrived, timeout_s passed, or
    nothing new arrived for stall_s after the first quiet_s (when nothing is due yet): a system that lost
    jobs is not waited for to the end. Returns every arrival."""
    started = time.monotonic()
    deadline = started + timeout_s
    params = {} if run is None else {"run": run}

    def counted() -> int:
        return int(_receiver.get(receiver_url + "/count", params=params).text)

    arrived = counted()
    progress = (arrived, started + max(0.0, quiet_s))
    while arrived < count and time.monotonic() < deadline:
        time.sleep(0.1)
        arrived = counted()
        now = time.monotonic()
        if arrived != progress[0]:
            progress = (arrived, now)
        elif now - progress[1] > stall_s:
            break
        if tick is not None:
            tick(arrived)
    return arrivals(receiver_url)


def receiver_cpu_s(receiver_url: str) -> float:
    """Returns the CPU seconds the receiver's process has used."""
    return float(_receiver.get(receiver_url + "/cpu").text)


def reset(receiver_url: str) -> None:
    """Forgets the receiver's arrivals."""
    _receiver.post(receiver_url + "/reset")
