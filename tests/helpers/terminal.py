"""A command run in a real terminal, as a person runs it: a pseudo-terminal that is the process's
controlling terminal and its stdin, stdout and stderr. Typing Ctrl-C there (the byte 0x03) is
what makes the terminal send SIGINT to the command, exactly as at a shell prompt."""

from __future__ import annotations

import os
import pty
import select
import signal
import time
from collections.abc import Mapping, Sequence
from types import TracebackType

CTRL_C = b"\x03"


class Terminal:
    """`argv` started in a new pseudo-terminal; `output` is everything it has printed so far."""

    def __init__(self, argv: Sequence[str], env: Mapping[str, str] | None = None) -> None:
        environment = dict(os.environ if env is None else env)
        pid, fd = pty.fork()
        if pid == 0:  # the child: the terminal is its controlling tty; become the command at once
            try:
                os.execve(argv[0], list(argv), environment)
            finally:
                os._exit(127)
        self.pid = pid
        self.fd = fd
        self.output = ""
        self.status: int | None = None

    def __enter__(self) -> Terminal:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.wait(0) is None:
            os.kill(self.pid, signal.SIGKILL)
            self.wait(30)
        os.close(self.fd)

    def type(self, data: bytes) -> None:
        os.write(self.fd, data)

    def read_until(self, text: str, timeout: float = 60) -> str:
        """Read until `text` has been printed; TimeoutError (with the output) if it never is."""
        deadline = time.monotonic() + timeout
        while text not in self.output:
            if time.monotonic() > deadline or not self._read(0.2) and self.wait(0) is not None:
                raise TimeoutError(f"{text!r} never appeared; the terminal shows:\n{self.output}")
        return self.output

    def wait(self, timeout: float = 60) -> int | None:
        """The exit code once the command has ended (reading what it prints meanwhile), or None."""
        deadline = time.monotonic() + timeout
        while self.status is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = os.waitstatus_to_exitcode(status)
                while self._read(0):
                    pass
                break
            if time.monotonic() > deadline:
                return None
            self._read(0.1)
        return self.status

    def _read(self, timeout: float) -> bool:
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            return False
        try:
            data = os.read(self.fd, 65536)
        except OSError:  # EIO: the command closed the terminal (it has ended)
            return False
        self.output += data.decode("utf-8", errors="replace").replace("\r\n", "\n")
        return bool(data)
