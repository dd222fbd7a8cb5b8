"""`kbkit run` for a stdio team server whose tools are filtered: instead of becoming the server
(exec), kbkit starts it and passes every line between the agent and it, applying the filter
(kbkit/server/toolfilter.py). Lines are forwarded as read unless the filter changes them; the
server's stderr is the agent's own; SIGTERM and SIGINT reach the server; its exit status is ours.
"""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any, BinaryIO

from kbkit.server.toolfilter import ToolFilter


def _parse(line: bytes) -> Any:
    try:
        return json.loads(line) if line.strip() else None
    except ValueError:
        return None


def proxy(
    argv: list[str],
    env: Mapping[str, str],
    cwd: Path,
    tools: ToolFilter,
    stdio: tuple[BinaryIO, BinaryIO],
) -> int:
    """Run the server between the agent's pipes, `stdio` (in, out), until it exits."""
    source, sink = stdio
    child = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=dict(env), cwd=cwd)
    assert child.stdin is not None and child.stdout is not None
    lock = threading.Lock()

    def say(data: bytes) -> None:
        with lock:
            sink.write(data)
            sink.flush()

    def agent_to_server() -> None:
        assert child.stdin is not None
        try:
            for line in source:
                refusal = tools.from_agent(_parse(line))
                if refusal is not None:
                    say(json.dumps(refusal).encode() + b"\n")
                    continue
                child.stdin.write(line)
                child.stdin.flush()
        except (BrokenPipeError, ValueError):
            pass  # the server is gone
        finally:
            with contextlib.suppress(OSError):
                child.stdin.close()  # the agent closed stdin: the server's cue to stop

    def forward(signum: int, _frame: object) -> None:
        child.send_signal(signum)

    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, forward)
    threading.Thread(target=agent_to_server, daemon=True).start()
    for line in child.stdout:
        message = _parse(line)
        if tools.from_server(message):
            line = json.dumps(message, separators=(",", ":")).encode() + b"\n"
        try:
            say(line)
        except BrokenPipeError:
            child.terminate()
            break
    return child.wait()
