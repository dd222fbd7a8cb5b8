"""How `kbkit serve` stops, as a person or a supervisor stops it: Ctrl-C typed in the terminal it
runs in, SIGINT while stdin is an open pipe (an agent that has not closed it), SIGINT to
`serve --http`. Each ends promptly with exit code 130, README's code for Ctrl-C; the end of stdin
ends stdio serving with 0. Started by hand in a terminal, serve says what it is waiting for.

The console script is started (not forked): these are about the process as a user starts it."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import pytest

from kbkit.errors import ExitCode
from tests.helpers.http import HttpServer
from tests.helpers.serve import kbkit_command
from tests.helpers.terminal import CTRL_C, Terminal
from tests.helpers.wait import wait_until

pytestmark = pytest.mark.processes

HINT = "waiting for an MCP client on stdin"


def test_ctrl_c_in_a_terminal_stops_stdio_serve_with_exit_code_130(project: Path) -> None:
    with Terminal([*kbkit_command(), "serve", "--root", str(project)]) as terminal:
        terminal.read_until("indexing finished")  # serving, its reader waiting on the terminal
        terminal.type(CTRL_C)
        assert terminal.wait(timeout=60) == ExitCode.INTERRUPTED, terminal.output
    assert "stopped (Ctrl-C)" in terminal.output and "Traceback" not in terminal.output


def test_serve_started_by_hand_in_a_terminal_says_it_waits_for_a_client_and_how_to_stop(
    project: Path,
) -> None:
    with Terminal([*kbkit_command(), "serve", "--root", str(project)]) as terminal:
        terminal.read_until(HINT)
        terminal.type(CTRL_C)
        terminal.wait(timeout=60)
    line = next(line for line in terminal.output.splitlines() if HINT in line)
    assert line.startswith("[kbkit] stdio: ") and "Ctrl-C stops it" in line


@pytest.mark.parametrize("signals", [1, 2])
def test_sigint_stops_stdio_serve_while_stdin_is_an_open_pipe(
    project: Path, tmp_path: Path, signals: int
) -> None:
    """An agent (or a supervisor) that keeps stdin open and sends SIGINT, once or twice in a row."""
    log = tmp_path / "stderr.log"
    with open(log, "w") as stderr:
        process = subprocess.Popen(
            [*kbkit_command(), "serve", "--root", str(project)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
        )
    try:
        wait_until(lambda: "indexing finished" in log.read_text(), timeout=60)
        for _ in range(signals):
            process.send_signal(signal.SIGINT)
        code = process.wait(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)
        assert process.stdin is not None
        process.stdin.close()
    text = log.read_text()
    assert code == ExitCode.INTERRUPTED, text
    assert "Traceback" not in text
    assert HINT not in text  # stdin is a pipe: an agent started it, nobody reads a hint


def test_the_end_of_stdin_still_ends_stdio_serve_with_exit_code_0(project: Path) -> None:
    done = subprocess.run(
        [*kbkit_command(), "serve", "--root", str(project)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""


def test_sigint_stops_serve_over_http_with_exit_code_130(project: Path) -> None:
    server = HttpServer(project, exec_script=True).wait_ready()
    assert server.stop() == ExitCode.INTERRUPTED, server.stderr()
    assert "[kbkit] stopped: in-flight requests finished, index closed" in server.stderr()
