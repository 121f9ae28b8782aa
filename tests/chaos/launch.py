"""Execs a command that dies with the test process: `python -m tests.chaos.launch PARENT_PID -- CMD ...`.

Linux keeps PR_SET_PDEATHSIG across exec, so redis-server, moto and the handler runners all get SIGKILL
when the pytest process that started them dies, even if it is killed itself and runs no teardown, and
even if they are SIGSTOPped at the time. Setting it here, after fork and exec, avoids `preexec_fn`,
which is unsafe in a parent that runs threads (receivers, tracked sockets).
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1


def main(argv: list[str]) -> int:
    """Arms the parent-death signal, checks the parent is still there, then becomes the command."""
    parent_pid, separator, *command = argv
    if separator != "--" or not command:
        print("usage: python -m tests.chaos.launch PARENT_PID -- CMD [ARG...]", file=sys.stderr)
        return 2
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    # The parent may have died before the signal was armed: then nobody would ever send it.
    if os.getppid() != int(parent_pid):
        return 3
    os.execvp(command[0], command)
    return 0  # not reached: execvp replaces this process or raises


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
