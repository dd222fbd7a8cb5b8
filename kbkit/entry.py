"""The `kbkit` console script. Before anything else it makes sure kbkit can run here: on a
platform without the file-system calls the guards rely on, or with a dependency missing from the
environment that runs kbkit (a broken or half-built virtual environment, often after a clone),
it says so in one line and exits, never a traceback in an agent's log."""

from __future__ import annotations

import sys

from kbkit import runtime
from kbkit.errors import ExitCode  # both the standard library only: safe before the checks


def main() -> None:
    reason = runtime.unsupported_platform()
    if reason is not None:
        sys.stderr.write(
            f"kbkit: error: {reason}: kbkit runs on POSIX systems (Linux, macOS) with Python 3.11+\n"
        )
        raise SystemExit(ExitCode.ENVIRONMENT)
    module = runtime.missing_dependency()
    if module is not None:
        sys.stderr.write(
            f"kbkit: error: dependencies not installed: {module} - run: {runtime.reinstall_hint()}\n"
        )
        raise SystemExit(ExitCode.ENVIRONMENT)
    from kbkit.cli import main as cli_main

    cli_main()
