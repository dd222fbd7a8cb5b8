"""`kbkit ARGS` as a client launches a stdio server, but forked from the test run's preloaded
forkserver instead of started from scratch (tests/peers/launch.py).

    python -I -S stdio_launcher.py SOCKET ARGS...

The client (the SDK's stdio_client, the Inspector) starts this script with its own environment,
working folder and pipes. The script hands all three, and its stdin, stdout and stderr themselves,
to the launch service listening on SOCKET, which forks `kbkit ARGS` onto them. The client then
talks to that process over its own pipes, as it would to an exec'd one: same framing, same EOF.
This script stays as the process the client sees: it forwards the signals a client sends, and
exits as the server exits (with its code, or killed by the same signal). Standard library only,
so that it starts in milliseconds.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sys

FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)


def main() -> int:
    path, argv = sys.argv[1], sys.argv[2:]
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(path)
    socket.send_fds(conn, [b"L"], [0, 1, 2])
    request = {"argv": argv, "env": dict(os.environ), "cwd": os.getcwd()}
    conn.sendall(json.dumps(request).encode() + b"\n")
    # The server holds the pipes now; this process keeps neither stdin nor stdout open, so the
    # client sees EOF exactly when the server closes its stdout (stderr is shared, as with exec).
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    replies = conn.makefile("rb")
    pid = int(replies.readline() or b"0")
    if not pid:
        sys.stderr.write("stdio_launcher: the launch service did not start the server\n")
        return 1

    def forward(signum: int, _frame: object) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)

    for signum in FORWARDED:
        signal.signal(signum, forward)
    status = replies.readline()
    if not status:
        sys.stderr.write("stdio_launcher: the launch service went away\n")
        return 1
    code = int(status)
    if code < 0:  # killed by a signal: die of the same one, as the client would see it
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    return code


if __name__ == "__main__":
    sys.exit(main())
